type t = Loop.fd

exception Error = Handle.Error

let fail = Handle.fail
let to_unix = Loop.unix
let is_open = Loop.is_open
let close = Handle.close
let register = Handle.register
let wait = Handle.wait

let of_unix ~sw unix =
  let op = "Braid_io.Fd.of_unix" in
  let loop = Loop.current ~op in
  let socket =
    match
      Unix.set_nonblock unix;
      (Unix.fstat unix).st_kind
    with
    | kind -> kind = Unix.S_SOCK
    | exception Unix.Unix_error (error, _, _) ->
        (try Unix.close unix with Unix.Unix_error _ -> ());
        fail "of_unix" error
  in
  register ~sw loop unix ~socket ~stream:false ~op

let pipe ~sw () =
  let loop = Loop.current ~op:"Braid_io.Fd.pipe" in
  let r, w =
    try Unix.pipe ~cloexec:true ()
    with Unix.Unix_error (error, _, _) -> fail "pipe" error
  in
  let setup unix =
    match Unix.set_nonblock unix with
    | () ->
        register ~sw loop unix ~socket:false ~stream:false
          ~op:"Braid_io.Fd.pipe"
    | exception Unix.Unix_error (error, _, _) ->
        (try Unix.close unix with Unix.Unix_error _ -> ());
        fail "pipe" error
  in
  match setup r with
  | read_end -> (read_end, setup w)
  | exception e ->
      (try Unix.close w with Unix.Unix_error _ -> ());
      raise e

let await_readable fd = wait fd ~write:false ~op:"await_readable"
let await_writable fd = wait fd ~write:true ~op:"await_writable"

let interrupt fd e =
  try Loop.interrupt_readers fd e
  with Loop.Closed -> fail "interrupt" Unix.EBADF

let await_input fd =
  Handle.usable fd ~op:"await_input";
  if not (Loop.may_be_readable fd) then
    Handle.wait_checked fd ~write:false ~op:"await_input"

let may_have_input = Loop.may_be_readable

let watch_input fd resumer =
  try Loop.watch_readable fd resumer
  with Loop.Closed -> fail "watch_input" Unix.EBADF

let io_budget = Loop.io_budget
let read_would_block = Loop.nothing_more_to_read
let spend = Loop.spend

let check_range name buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg ("Braid_io." ^ name ^ ": invalid range")

let recv_or_read fd unix buf off len =
  if Loop.is_socket fd then Syscall.recv unix buf off len
  else Syscall.read unix buf off len

let send_or_write fd unix buf off len =
  if Loop.is_socket fd then Syscall.send unix buf off len
  else Syscall.write unix buf off len

let read_when_ready fd buf off len =
  Handle.nonblocking fd Readable ~op:"read" ~blocked:Handle.would_block
    recv_or_read buf off len

(* On io_uring, a socket is read and written by ring operations
   (Uring_ops): no system call of their own, and no readiness to wait for.
   [busy] (another fiber's operation in flight on the socket) falls back to
   the readiness path. A socket may be closed while the fiber waited for a
   previous operation: its number could name another file by now. *)
let ring_recv ops fd buf off len =
  if not (Loop.is_open fd) then fail "read" Unix.EBADF;
  match
    Uring_ops.recv ops (Loop.unix fd) ~token:(Loop.token fd)
      ~ready:(Loop.may_be_readable fd) buf off len
  with
  | n when n >= 0 -> n
  | _busy -> read_when_ready fd buf off len
  | exception Unix.Unix_error (error, _, _) -> fail "read" error

let read fd buf off len =
  let n =
    match Loop.completions fd with
    | Some ops when len > 0 -> ring_recv ops fd buf off len
    | Some _ | None -> read_when_ready fd buf off len
  in
  Loop.read_returned fd ~wanted:len n;
  n

let read_into fd buf off len =
  check_range "read_into" buf off len;
  Handle.usable fd ~op:"read";
  Loop.spend fd;
  read fd buf off len

let write fd buf off len =
  Handle.send_all fd ~more:false ~when_ready:send_or_write buf off len

let write_all fd buf off len =
  check_range "write_all" buf off len;
  if len > 0 then (
    Handle.usable fd ~op:"write";
    Loop.spend fd;
    write fd buf off len)

(* The bytes are only read by the system call. *)
let write_string fd s =
  if s <> "" then (
    Handle.usable fd ~op:"write";
    Loop.spend fd;
    write fd (Bytes.unsafe_of_string s) 0 (String.length s))
