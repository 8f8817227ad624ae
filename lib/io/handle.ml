exception Error = Io_error.Io_error

let fail = Io_error.fail

let close fd =
  try Loop.close fd with Unix.Unix_error (error, _, _) -> fail "close" error

(* Closing [fd] earlier takes its release back from the switch, so a
   long-lived switch does not keep every descriptor it ever owned. *)
let attach ~sw fd =
  match Braid.Switch.on_release_removable sw (fun () -> close fd) with
  | hook -> Loop.set_switch_release fd hook
  | exception e ->
      (try close fd with Error _ -> ());
      raise e

let register ~sw loop unix ~socket ~stream ~op =
  match
    try Loop.register loop unix ~socket ~stream ~op
    with Unix.Unix_error (error, _, _) -> fail "epoll_ctl" error
  with
  | fd ->
      attach ~sw fd;
      fd
  | exception e ->
      (try Unix.close unix with Unix.Unix_error _ -> ());
      raise e

let usable fd ~op =
  try Loop.check_usable fd ~op with Loop.Closed -> fail op Unix.EBADF

let wait fd ~write ~op =
  try Loop.await fd ~write ~op with Loop.Closed -> fail op Unix.EBADF

let wait_checked fd ~write ~op =
  try Loop.await_checked fd ~write with Loop.Closed -> fail op Unix.EBADF

type wanted = Readable | Acceptable | Writable

(* The one "call; if it would block, wait for readiness; retry" loop (Eio's
   [do_nonblocking]). Ownership is checked once, by the caller, before the
   first call; after each wake-up only whether another fiber closed the
   descriptor meanwhile (its number could already name another file).
   The call's arguments are passed along rather than captured: a closure
   over a buffer and its bounds would be allocated on every read and write,
   the hot path of every connection. *)
let rec nonblocking fd wanted ~op ~blocked call a b c =
  if wanted = Readable && not (Loop.may_be_readable fd) then
    wait_then_retry fd wanted ~op ~blocked call a b c
  else
    match call fd (Loop.unix fd) a b c with
    | result when blocked result ->
        if wanted = Readable then Loop.nothing_more_to_read fd;
        wait_then_retry fd wanted ~op ~blocked call a b c
    | result -> result
    | exception Unix.Unix_error (error, _, _) -> fail op error

and wait_then_retry fd wanted ~op ~blocked call a b c =
  wait_checked fd ~write:(wanted = Writable) ~op;
  if not (Loop.is_open fd) then fail op Unix.EBADF;
  nonblocking fd wanted ~op ~blocked call a b c

let would_block n = n < 0

let ring_send ops fd ~more buf off len =
  if not (Loop.is_open fd) then fail "write" Unix.EBADF;
  try Uring_ops.send ops (Loop.unix fd) ~token:(Loop.token fd) ~more buf off len
  with Unix.Unix_error (error, _, _) -> fail "write" error

let rec send_all fd ~more ~when_ready buf off len =
  if len > 0 then
    let n =
      match Loop.completions fd with
      | Some ops -> ring_send ops fd ~more buf off len
      | None ->
          nonblocking fd Writable ~op:"write" ~blocked:would_block when_ready
            buf off len
    in
    send_all fd ~more ~when_ready buf (off + n) (len - n)

let flush fd ~op =
  match Loop.completions fd with
  | None -> ()
  | Some ops -> (
      try Uring_ops.flush ops ~token:(Loop.token fd) ~op
      with Unix.Unix_error (error, _, _) -> fail op error)
