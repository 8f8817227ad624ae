type waiter = { id : int; resume : unit Blocking.resumer }
type state = Unlocked | Locked of { owner : int; waiters : waiter Fqueue.t }
type t = state Atomic.t

let create () = Atomic.make Unlocked
let is_locked t = match Atomic.get t with Unlocked -> false | Locked _ -> true

let rec try_lock_as t owner =
  match Atomic.get t with
  | Locked _ -> false
  | Unlocked ->
      Atomic.compare_and_set t Unlocked
        (Locked { owner; waiters = Fqueue.empty })
      || try_lock_as t owner

let rec register t id resume =
  match Atomic.get t with
  | Unlocked -> if try_lock_as t id then Some () else register t id resume
  | Locked l as seen ->
      let waiters = Fqueue.push l.waiters { id; resume } in
      if Atomic.compare_and_set t seen (Locked { l with waiters }) then None
      else register t id resume

(* A waiter that is no longer queued was handed the lock, but its resumer
   said "cancelled", so the releaser took the lock back: either way it does
   not hold it. *)
let rec withdraw t resume e =
  match Atomic.get t with
  | Unlocked -> raise e
  | Locked l as seen -> (
      match Fqueue.remove (fun w -> w.resume == resume) l.waiters with
      | None -> raise e
      | Some waiters ->
          if Atomic.compare_and_set t seen (Locked { l with waiters }) then
            raise e
          else withdraw t resume e)

let lock_as t id =
  match Atomic.get t with
  | Locked { owner; _ } when owner = id ->
      invalid_arg "Braid_sync.Mutex.lock: the caller already holds the lock"
  | _ ->
      if not (try_lock_as t id) then
        Blocking.suspend_withdrawing ~register:(register t id)
          ~withdraw:(withdraw t)

(* Ownership passes to the first waiter before it is resumed; if it turns out
   to be cancelled, release again on its behalf. *)
let rec release t =
  match Atomic.get t with
  | Unlocked -> assert false
  | Locked { waiters; _ } as seen -> (
      match Fqueue.pop waiters with
      | None -> if not (Atomic.compare_and_set t seen Unlocked) then release t
      | Some (w, rest) ->
          if
            Atomic.compare_and_set t seen
              (Locked { owner = w.id; waiters = rest })
          then (if not (w.resume (Ok ())) then release t)
          else release t)

let check_owner t id what =
  match Atomic.get t with
  | Locked { owner; _ } when owner = id -> ()
  | _ -> invalid_arg (what ^ ": the caller does not hold the lock")

let lock t = lock_as t (Blocking.self_id ())
let try_lock t = try_lock_as t (Blocking.self_id ())

let unlock t =
  check_owner t (Blocking.self_id ()) "Braid_sync.Mutex.unlock";
  release t

let protect t f =
  let id = Blocking.self_id () in
  lock_as t id;
  match f () with
  | v ->
      release t;
      v
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      release t;
      Printexc.raise_with_backtrace e bt
