(* Invariant: waiters only while count = 0. *)
type state = { count : int; waiters : unit Blocking.resumer Fqueue.t }
type t = state Atomic.t

let make n =
  if n < 0 then invalid_arg "Braid_sync.Semaphore.make: negative count";
  Atomic.make { count = n; waiters = Fqueue.empty }

let get_value t = (Atomic.get t).count

let rec try_acquire t =
  let seen = Atomic.get t in
  seen.count > 0
  && (Atomic.compare_and_set t seen { seen with count = seen.count - 1 }
     || try_acquire t)

let rec register t resume =
  let seen = Atomic.get t in
  if seen.count > 0 then if try_acquire t then Some () else register t resume
  else if
    Atomic.compare_and_set t seen
      { seen with waiters = Fqueue.push seen.waiters resume }
  then None
  else register t resume

let rec withdraw t resume e =
  let seen = Atomic.get t in
  match Fqueue.remove (fun r -> r == resume) seen.waiters with
  | None -> raise e
  | Some waiters ->
      if Atomic.compare_and_set t seen { seen with waiters } then raise e
      else withdraw t resume e

let acquire t =
  if not (try_acquire t) then
    Blocking.suspend_withdrawing ~register:(register t) ~withdraw:(withdraw t)

let rec release t =
  let seen = Atomic.get t in
  match Fqueue.pop seen.waiters with
  | None ->
      if
        not (Atomic.compare_and_set t seen { seen with count = seen.count + 1 })
      then release t
  | Some (resume, waiters) ->
      if Atomic.compare_and_set t seen { seen with waiters } then (
        if not (resume (Ok ())) then release t)
      else release t
