type t = Unix.file_descr
type flags = int
type op = Add | Modify | Delete

external create : unit -> t = "braid_io_epoll_create"

external ctl : t -> op -> Unix.file_descr -> flags -> int -> unit
  = "braid_io_epoll_ctl"

external wait_into : t -> int array -> int -> int = "braid_io_epoll_wait"
external eventfd : unit -> Unix.file_descr = "braid_io_eventfd"
external eventfd_signal : Unix.file_descr -> unit = "braid_io_eventfd_signal"
external eventfd_drain : Unix.file_descr -> unit = "braid_io_eventfd_drain"

let close = Unix.close
let readable = 0x001
let writable = 0x004
let error = 0x008
let hang_up = 0x010
let read_hang_up = 0x2000
let edge_triggered = 1 lsl 31

let check_token token =
  if token < 0 then invalid_arg "Braid_io.Epoll: negative token"

let add t fd flags ~token =
  check_token token;
  ctl t Add fd flags token

let modify t fd flags ~token =
  check_token token;
  ctl t Modify fd flags token

let remove t fd = ctl t Delete fd 0 0

type events = int array

let events n =
  if n < 1 then invalid_arg "Braid_io.Epoll.events: need room for one event";
  Array.make (2 * n) 0

let wait t buf ~timeout_ms = wait_into t buf timeout_ms
let token buf i = buf.(2 * i)
let flags buf i = buf.((2 * i) + 1)
