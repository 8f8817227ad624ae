(* A multishot poll per descriptor, named in the ring by its user data: the
   loop's token and a generation. A token is reused once its descriptor is
   closed, but the kernel may still hold completions of the old poll (posted
   before the removal was submitted, or the removal's own -ECANCELED), and a
   removal names its poll by user data: the generation, bumped at each
   removal, keeps both from reaching the descriptor that took the token.
   Completions of Uring_ops' operations carry negative user data and go
   there. *)

type t = {
  ring : Uring_ring.t;
  ops : Uring_ops.t option;
      (** [None] with BRAID_IO_URING_COMPLETION=0: sockets are read and written
          with system calls, the ring only polls. Allocated once. *)
  completions : int array;
      (** (user data, result, more) triples, as [Uring_ring.wait] leaves them.
      *)
  events : int array;  (** (token, flags) pairs of the current ones. *)
  mutable generations : int array;  (** By token. *)
  mutable masks : int array;
  mutable descriptors : Unix.file_descr array;
      (** By token, the mask and the descriptor that were asked: to arm the poll
          again if the kernel ends it, or at all if it was deferred. *)
  lazy_polls : bool;
      (** BRAID_IO_URING_LAZY=1: a socket's poll is armed at its first wait for
          readiness only (see {!add}). *)
  mutable armed : Bytes.t;
      (** By token: ['\001'] once its poll is submitted (queued). *)
  mutable scratch_epoll : Epoll.t option;
      (** Made on first use: only non-sockets need the check. *)
}

(* Submission and completion entries. Registrations and removals of a turn
   go in one submission (a burst of accepted connections can exceed it: the
   stub then submits early); completions beyond the CQ's twice as many wait
   in the kernel's overflow list (FEAT_NODROP), and multishot polls whose
   completion overflowed end and are armed again. *)
let ring_entries = 1024
let token_bits = 31
let token_mask = (1 lsl token_bits) - 1
let generation_mask = (1 lsl 30) - 1

(* A failed removal's completion: user data no poll has. *)
let removal_data = -1

let completion_wanted () =
  match Sys.getenv_opt "BRAID_IO_URING_COMPLETION" with
  | Some "0" -> false
  | Some _ | None -> true

let create ~events =
  let ring =
    Uring_ring.create ring_entries
      ~defer:(Sys.getenv_opt "BRAID_IO_URING_DEFER" = Some "1")
  in
  {
    ring;
    ops = (if completion_wanted () then Some (Uring_ops.create ring) else None);
    completions = Array.make (3 * events) 0;
    events = Array.make (2 * events) 0;
    generations = [||];
    masks = [||];
    descriptors = [||];
    lazy_polls = Sys.getenv_opt "BRAID_IO_URING_LAZY" = Some "1";
    armed = Bytes.empty;
    scratch_epoll = None;
  }

let ops t = t.ops

let close t =
  Uring_ring.close t.ring;
  Option.iter Uring_ops.close_lingering t.ops;
  Option.iter Epoll.close t.scratch_epoll;
  t.scratch_epoll <- None

let grow array token ~filler =
  if token < Array.length array then array
  else
    let bigger =
      Array.make (max (2 * Array.length array) (token + 64)) filler
    in
    Array.blit array 0 bigger 0 (Array.length array);
    bigger

(* Epoll refuses what has no poll method (regular files, directories,
   /dev/null) with EPERM; a poll on the ring would instead complete at once,
   for ever. Asking epoll is the exact test. *)
let check_pollable t fd =
  let epoll =
    match t.scratch_epoll with
    | Some e -> e
    | None ->
        let e = Epoll.create () in
        t.scratch_epoll <- Some e;
        e
  in
  Epoll.add epoll fd Epoll.readable ~token:0;
  Epoll.remove epoll fd

let user_data t token = token lor (t.generations.(token) lsl token_bits)
let is_armed t token = Bytes.unsafe_get t.armed token <> '\000'

let arm t token =
  if not (is_armed t token) then (
    Bytes.unsafe_set t.armed token '\001';
    Uring_ring.poll_add t.ring t.descriptors.(token) t.masks.(token)
      (user_data t token))

(* With completion-based IO, a socket's reads and writes need no poll, and
   one armed from the start posts a completion for every arrival of bytes
   beside the receive's own. Armed only at the first wait for readiness
   ({!arm}; it checks the socket's state as it is armed, so readiness that
   came before is still reported), it changes the order in which the loop
   learns things: a client that reads its response, closes and connects
   again had its new connection served before the loop saw the old one's
   end, since the old one's poll was armed only after its fiber came back
   from the send (test/server's "idle connections hold no fiber" counted
   one connection too many). So polls are armed at registration, as
   epoll's are, unless BRAID_IO_URING_LAZY=1 (kept to measure the
   difference: docs/io.md, Backends). *)
let add t fd flags ~token ~socket =
  if token < 0 || token > token_mask then
    invalid_arg "Braid_io.Uring_poller: token out of range";
  if not socket then check_pollable t fd;
  t.generations <- grow t.generations token ~filler:0;
  t.masks <- grow t.masks token ~filler:0;
  t.descriptors <- grow t.descriptors token ~filler:Unix.stdin;
  if token >= Bytes.length t.armed then (
    let bigger = Bytes.make (Array.length t.generations) '\000' in
    Bytes.blit t.armed 0 bigger 0 (Bytes.length t.armed);
    t.armed <- bigger);
  t.masks.(token) <- flags;
  t.descriptors.(token) <- fd;
  Bytes.unsafe_set t.armed token '\000';
  if not (socket && Option.is_some t.ops && t.lazy_polls) then arm t token

let remove t fd ~token =
  let cancelled =
    match t.ops with
    | Some ops -> Uring_ops.forget ops fd ~token
    | None -> false
  in
  if is_armed t token then (
    (* Submits the cancellation too, first. *)
    Uring_ring.poll_remove t.ring (user_data t token) removal_data;
    Bytes.unsafe_set t.armed token '\000')
  else if cancelled then Uring_ring.submit t.ring;
  t.generations.(token) <- (t.generations.(token) + 1) land generation_mask

(* A poll that ended (no [more]) with a result was cut short by the kernel
   (its completion overflowed the CQ): armed again, by descriptor number,
   which still names the same file, since the loop removes the poll before
   it closes. A negative result is the poll's failure: the waiters are woken
   to meet the error in their own system call, and it is not armed again,
   which could spin. *)
let error_flags = Epoll.(readable lor writable lor error)

let wait t ~timeout_ms =
  let n = Uring_ring.wait t.ring t.completions timeout_ms in
  let found = ref 0 in
  for i = 0 to n - 1 do
    let data = t.completions.(3 * i) in
    if Uring_ops.is_operation data then
      match t.ops with
      | Some ops -> Uring_ops.complete ops data t.completions.((3 * i) + 1)
      | None -> ()
    else if data <> removal_data then
      let token = data land token_mask in
      if
        token < Array.length t.generations
        && t.generations.(token) = data lsr token_bits
      then (
        let result = t.completions.((3 * i) + 1) in
        let more = t.completions.((3 * i) + 2) <> 0 in
        let j = !found in
        t.events.(2 * j) <- token;
        t.events.((2 * j) + 1) <- (if result >= 0 then result else error_flags);
        found := j + 1;
        if (not more) && result >= 0 then
          Uring_ring.poll_add t.ring t.descriptors.(token) t.masks.(token) data)
  done;
  !found

let token t i = t.events.(2 * i)
let flags t i = t.events.((2 * i) + 1)
let waiting t = match t.ops with Some ops -> Uring_ops.waiting ops | None -> 0
