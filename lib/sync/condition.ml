type t = unit Blocking.resumer Fqueue.t Atomic.t

let create () = Atomic.make Fqueue.empty

let rec add t resume =
  let seen = Atomic.get t in
  if not (Atomic.compare_and_set t seen (Fqueue.push seen resume)) then
    add t resume

let rec remove t resume =
  let seen = Atomic.get t in
  match Fqueue.remove (fun r -> r == resume) seen with
  | None -> ()
  | Some rest ->
      if not (Atomic.compare_and_set t seen rest) then remove t resume

let wait t m =
  let id = Blocking.self_id () in
  Mutex.check_owner m id "Braid_sync.Condition.wait";
  let registered = ref None in
  match
    Blocking.suspend (fun resume ->
        add t resume;
        registered := Some resume;
        Mutex.release m;
        None)
  with
  | () -> Blocking.protect (fun () -> Mutex.lock_as m id)
  | exception e -> (
      match !registered with
      | None -> raise e (* Cancelled before waiting: [m] was never released. *)
      | Some resume ->
          remove t resume;
          Blocking.protect (fun () -> Mutex.lock_as m id);
          raise e)

let rec signal t =
  let seen = Atomic.get t in
  match Fqueue.pop seen with
  | None -> ()
  | Some (resume, rest) ->
      if Atomic.compare_and_set t seen rest then (
        if not (resume (Ok ())) then signal t)
      else signal t

let broadcast t =
  let waiters = Atomic.exchange t Fqueue.empty in
  List.iter (fun resume -> ignore (resume (Ok ()))) (Fqueue.to_list waiters)
