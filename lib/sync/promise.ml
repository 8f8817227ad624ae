(* A failure remembers where it was raised, and whether anyone has seen it: a
   pool reports the failures of tasks nobody awaited. *)
type failure = {
  error : exn;
  backtrace : Printexc.raw_backtrace;
  observed : bool Atomic.t;
}

type 'a state =
  | Pending of 'a Blocking.resumer list  (** Newest first. *)
  | Filled of 'a
  | Failed of failure

type 'a t = 'a state Atomic.t

exception Already_filled

let no_waiters = Pending []
let create () = Atomic.make no_waiters

let rec settle t filled r =
  match Atomic.get t with
  | Filled _ | Failed _ -> false
  | Pending waiters as seen ->
      if Atomic.compare_and_set t seen filled then (
        List.iter (fun resume -> ignore (resume r)) (List.rev waiters);
        true)
      else settle t filled r

let failure ?(backtrace = Printexc.get_callstack 20) error =
  Failed { error; backtrace; observed = Atomic.make false }

let try_fill t r =
  match r with
  | Ok v -> settle t (Filled v) r
  | Error e -> settle t (failure e) r

let fill t v = if not (settle t (Filled v) (Ok v)) then raise Already_filled

let fill_error ?backtrace t e =
  if not (settle t (failure ?backtrace e) (Error e)) then raise Already_filled

let observe f =
  Atomic.set f.observed true;
  Printexc.raise_with_backtrace f.error f.backtrace

let peek t =
  match Atomic.get t with
  | Filled v -> Some (Ok v)
  | Failed f ->
      Atomic.set f.observed true;
      Some (Error f.error)
  | Pending _ -> None

let unobserved_error t =
  match Atomic.get t with
  | Failed f when not (Atomic.get f.observed) -> Some (f.error, f.backtrace)
  | Failed _ | Filled _ | Pending _ -> None

let rec register t resume =
  match Atomic.get t with
  | Filled v -> Some v
  | Failed f -> observe f
  | Pending waiters as seen ->
      if Atomic.compare_and_set t seen (Pending (resume :: waiters)) then None
      else register t resume

let rec withdraw t resume e =
  match Atomic.get t with
  | Filled _ | Failed _ -> raise e
  | Pending waiters as seen ->
      let others = List.filter (fun r -> r != resume) waiters in
      if Atomic.compare_and_set t seen (Pending others) then raise e
      else withdraw t resume e

let await t =
  match Atomic.get t with
  | Filled v -> v
  | Failed f -> observe f
  | Pending _ -> (
      match
        Blocking.suspend_withdrawing ~register:(register t)
          ~withdraw:(withdraw t)
      with
      | v -> v
      | exception e -> (
          (* Woken with the promise's error: raise it where it was raised. *)
          match Atomic.get t with
          | Failed f when f.error == e -> observe f
          | Failed _ | Filled _ | Pending _ -> raise e))
