external read : Unix.file_descr -> bytes -> int -> int -> int = "braid_io_read"

external write : Unix.file_descr -> bytes -> int -> int -> int
  = "braid_io_write"

external send : Unix.file_descr -> bytes -> int -> int -> int = "braid_io_send"
external recv : Unix.file_descr -> bytes -> int -> int -> int = "braid_io_recv"

external accept : Unix.file_descr -> (Unix.file_descr * Unix.sockaddr) option
  = "braid_io_accept"

external recvfrom :
  Unix.file_descr -> bytes -> int -> int -> (int * Unix.sockaddr) option
  = "braid_io_recvfrom"

external sendto : Unix.file_descr -> bytes -> int -> int -> Unix.sockaddr -> int
  = "braid_io_sendto"

external send_more : Unix.file_descr -> bytes -> int -> int -> int
  = "braid_io_send_more"

external sendfile : Unix.file_descr -> Unix.file_descr -> int -> int -> int
  = "braid_io_sendfile"

external block_sigpipe : unit -> bool = "braid_io_block_sigpipe"
external unblock_sigpipe : unit -> unit = "braid_io_unblock_sigpipe"
