exception Undefined = Stdlib.Lazy.Undefined

type 'a state =
  | Unforced of (unit -> 'a)
  | Forcing of {
      forcer : int;
      fn : unit -> 'a;
      waiters : unit Blocking.resumer list;
    }
  | Done of ('a, exn * Printexc.raw_backtrace) result

type 'a t = 'a state Atomic.t

let from_fun f = Atomic.make (Unforced f)
let from_val v = Atomic.make (Done (Ok v))
let is_val t = match Atomic.get t with Done (Ok _) -> true | _ -> false
let wake_all = List.iter (fun resume -> ignore (resume (Ok ())))

let finish t next =
  match Atomic.exchange t next with
  | Forcing { waiters; _ } -> wake_all waiters
  | Unforced _ | Done _ -> assert false

let rec register t resume =
  match Atomic.get t with
  | Unforced _ | Done _ -> Some ()
  | Forcing f as seen ->
      if
        Atomic.compare_and_set t seen
          (Forcing { f with waiters = resume :: f.waiters })
      then None
      else register t resume

let rec withdraw t resume e =
  match Atomic.get t with
  | Unforced _ | Done _ -> raise e
  | Forcing f as seen ->
      let waiters = List.filter (fun r -> r != resume) f.waiters in
      if Atomic.compare_and_set t seen (Forcing { f with waiters }) then raise e
      else withdraw t resume e

let rec force t =
  match Atomic.get t with
  | Done (Ok v) -> v
  | Done (Error (e, bt)) -> Printexc.raise_with_backtrace e bt
  | Unforced fn as seen ->
      let forcer = Blocking.self_id () in
      if Atomic.compare_and_set t seen (Forcing { forcer; fn; waiters = [] })
      then compute t fn
      else force t
  | Forcing { forcer; _ } ->
      if forcer = Blocking.self_id () then raise Undefined;
      Blocking.suspend_withdrawing ~register:(register t) ~withdraw:(withdraw t);
      force t

and compute t fn =
  match fn () with
  | v ->
      finish t (Done (Ok v));
      v
  | exception Blocking.Cancelled ->
      let bt = Printexc.get_raw_backtrace () in
      finish t (Unforced fn);
      Printexc.raise_with_backtrace Blocking.Cancelled bt
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      finish t (Done (Error (e, bt)));
      Printexc.raise_with_backtrace e bt
