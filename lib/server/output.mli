(** A connection's output buffer: response heads and small bodies are gathered
    here and sent with one write; responses to pipelined requests accumulate
    until the connection is about to wait for input.

    Owned by one connection's fiber. {!flush} and the writes block only that
    fiber (through the write function), while the socket is full. *)

type t

val create :
  ?buffer:bytes ->
  ?storage:Braid_http.Input.storage ->
  size:int ->
  (bytes -> int -> int -> unit) ->
  t
(** [create ~size write] buffers up to [size] bytes (more for a long head) and
    sends with [write buf off len], which must send everything. With [buffer]
    (at least 64 bytes), that storage is used instead of a new one of [size]
    bytes; it must not be used elsewhere until the connection is done. With
    [storage], the buffer is taken from there when first needed, and {!release}
    gives it back. *)

val release : t -> unit
(** [release t] gives the buffer back to its storage if nothing is buffered; the
    next write takes one again. Does nothing without storage. *)

val length : t -> int
(** Bytes buffered and not yet sent. *)

val contents_from : t -> int -> string
(** [contents_from t start] is a copy of what was added since {!length} was
    [start] (nothing was sent meanwhile). *)

val room : t -> int
(** Bytes that fit before the buffer is full. *)

val add_string : t -> string -> unit
(** [add_string t s] appends [s], growing the buffer if needed. *)

val add_field : t -> string -> string -> unit
(** [add_field t name value] appends ["name: value\r\n"]. *)

val add_bytes : t -> bytes -> int -> int -> unit
val add_char : t -> char -> unit

val add_int : t -> int -> unit
(** [add_int t n] appends the decimal digits of [n >= 0], allocating nothing. *)

val add_hex : t -> int -> unit
(** [add_hex t n] appends [n >= 0] in lowercase hexadecimal. *)

val send : t -> bytes -> int -> int -> unit
(** [send t buf off len] appends the slice, or for a large one sends what is
    buffered then the slice directly (no copy). *)

val fill_from : t -> (bytes -> int -> int -> int) -> int
(** [fill_from t read] lets [read buf off len] write at most [len] bytes at the
    end of the buffer (flushing first if the buffer is full) and keeps the count
    it returns. For copying a file with no intermediate buffer. *)

val flush : t -> unit
(** [flush t] sends everything buffered. *)

val flush_with : t -> (bytes -> int -> int -> unit) -> unit
(** [flush_with t write] sends everything buffered with [write] instead of the
    write function of {!create} (one that tells the kernel more follows, say).
*)

(** {1 Files past the buffer} *)

type file_sender = {
  write_more : bytes -> int -> int -> unit;
      (** Sends everything, as the connection's write, telling the kernel that
          more follows at once ([MSG_MORE]): for the head before a file. *)
  send_file : Unix.file_descr -> off:int -> len:int -> int;
      (** [send_file fd ~off ~len] sends [len] bytes of the file [fd] from [off]
          by sendfile(2) ({!Braid_io.Net.sendfile}) and returns how many: fewer
          only if the file ended first. Raises {!Cannot_send_file}, having sent
          nothing, where the kernel cannot send from [fd]. *)
}
(** How a socket connection sends a file without copying it through the process.
    Both count as the connection's writes for the send timeout. *)

exception Cannot_send_file
(** Raised by [send_file] where sendfile(2) does not apply: the bytes must be
    read and written instead. *)
