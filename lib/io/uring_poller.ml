(* A multishot poll per descriptor, named in the ring by its user data: the
   loop's token and a generation. A token is reused once its descriptor is
   closed, but the kernel may still hold completions of the old poll (posted
   before the removal was submitted, or the removal's own -ECANCELED), and a
   removal names its poll by user data: the generation, bumped at each
   removal, keeps both from reaching the descriptor that took the token. *)

type ring

external create_ring : int -> ring = "braid_io_uring_create"
external close_ring : ring -> unit = "braid_io_uring_close"

external poll_add : ring -> Unix.file_descr -> int -> int -> unit
  = "braid_io_uring_poll_add"

external poll_remove : ring -> int -> int -> unit = "braid_io_uring_poll_remove"
external wait_into : ring -> int array -> int -> int = "braid_io_uring_wait"

type t = {
  ring : ring;
  completions : int array;
      (** (user data, result, more) triples, as [wait_into] leaves them. *)
  events : int array;  (** (token, flags) pairs of the current ones. *)
  mutable generations : int array;  (** By token. *)
  mutable masks : int array;
  mutable descriptors : Unix.file_descr array;
      (** By token, the mask and the descriptor that were asked: to arm the poll
          again if the kernel ends it. *)
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

let create ~events =
  {
    ring = create_ring ring_entries;
    completions = Array.make (3 * events) 0;
    events = Array.make (2 * events) 0;
    generations = [||];
    masks = [||];
    descriptors = [||];
    scratch_epoll = None;
  }

let close t =
  close_ring t.ring;
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

let add t fd flags ~token ~socket =
  if token < 0 || token > token_mask then
    invalid_arg "Braid_io.Uring_poller: token out of range";
  if not socket then check_pollable t fd;
  t.generations <- grow t.generations token ~filler:0;
  t.masks <- grow t.masks token ~filler:0;
  t.descriptors <- grow t.descriptors token ~filler:Unix.stdin;
  t.masks.(token) <- flags;
  t.descriptors.(token) <- fd;
  poll_add t.ring fd flags (user_data t token)

let remove t _fd ~token =
  poll_remove t.ring (user_data t token) removal_data;
  t.generations.(token) <- (t.generations.(token) + 1) land generation_mask

(* A poll that ended (no [more]) with a result was cut short by the kernel
   (its completion overflowed the CQ): armed again, by descriptor number,
   which still names the same file, since the loop removes the poll before
   it closes. A negative result is the poll's failure: the waiters are woken
   to meet the error in their own system call, and it is not armed again,
   which could spin. *)
let error_flags = Epoll.(readable lor writable lor error)

let wait t ~timeout_ms =
  let n = wait_into t.ring t.completions timeout_ms in
  let found = ref 0 in
  for i = 0 to n - 1 do
    let data = t.completions.(3 * i) in
    if data <> removal_data then
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
          poll_add t.ring t.descriptors.(token) t.masks.(token) data)
  done;
  !found

let token t i = t.events.(2 * i)
let flags t i = t.events.((2 * i) + 1)
