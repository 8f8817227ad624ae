type t

external create : int -> defer:bool -> t = "braid_io_uring_create"
external close : t -> unit = "braid_io_uring_close"

external poll_add : t -> Unix.file_descr -> int -> int -> unit
  = "braid_io_uring_poll_add"

external poll_remove : t -> int -> int -> unit = "braid_io_uring_poll_remove"
external wait : t -> int array -> int -> int = "braid_io_uring_wait"

external recv : t -> Unix.file_descr -> int -> int -> int -> unit
  = "braid_io_uring_recv"

external append : t -> int -> int -> bytes -> int -> int -> unit
  = "braid_io_uring_append_bytecode" "braid_io_uring_append"

external send : t -> Unix.file_descr -> int -> int -> int -> bool -> int -> unit
  = "braid_io_uring_send_bytecode" "braid_io_uring_send"

external copy_out : t -> int -> int -> bytes -> int -> int -> unit
  = "braid_io_uring_copy_out_bytecode" "braid_io_uring_copy_out"
[@@noalloc]

external cancel : t -> int -> int -> unit = "braid_io_uring_cancel"

external cancel_fd : t -> Unix.file_descr -> int -> unit
  = "braid_io_uring_cancel_fd"

external ecanceled : unit -> int = "braid_io_uring_ecanceled"

let ecanceled = ecanceled ()

external fail : int -> string -> 'a = "braid_io_uring_fail"
external submit : t -> unit = "braid_io_uring_submit"
