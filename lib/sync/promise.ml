type 'a state =
  | Pending of 'a Blocking.resumer list  (** Newest first. *)
  | Filled of ('a, exn) result

type 'a t = 'a state Atomic.t

exception Already_filled

let no_waiters = Pending []
let create () = Atomic.make no_waiters

let rec try_fill t r =
  match Atomic.get t with
  | Filled _ -> false
  | Pending waiters as seen ->
      if Atomic.compare_and_set t seen (Filled r) then (
        List.iter (fun resume -> ignore (resume r)) (List.rev waiters);
        true)
      else try_fill t r

let fill t v = if not (try_fill t (Ok v)) then raise Already_filled
let fill_error t e = if not (try_fill t (Error e)) then raise Already_filled
let peek t = match Atomic.get t with Filled r -> Some r | Pending _ -> None

let rec register t resume =
  match Atomic.get t with
  | Filled (Ok v) -> Some v
  | Filled (Error e) -> raise e
  | Pending waiters as seen ->
      if Atomic.compare_and_set t seen (Pending (resume :: waiters)) then None
      else register t resume

let rec withdraw t resume e =
  match Atomic.get t with
  | Filled _ -> raise e
  | Pending waiters as seen ->
      let others = List.filter (fun r -> r != resume) waiters in
      if Atomic.compare_and_set t seen (Pending others) then raise e
      else withdraw t resume e

let await t =
  match Atomic.get t with
  | Filled (Ok v) -> v
  | Filled (Error e) -> raise e
  | Pending _ ->
      Blocking.suspend_withdrawing ~register:(register t) ~withdraw:(withdraw t)
