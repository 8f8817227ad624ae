(** A buffered reader over a socket (or any readable {!Fd.t}): lines with a
    maximum length, exactly [n] bytes, up to a delimiter. What a line protocol
    (a chat, SMTP, Redis) needs, without a read per byte or a buffer that grows
    as far as a client pleases.

    {[
      let rec serve r handle =
        match Buf_read.line ~max:1024 r with
        | Some line ->
            handle line;
            serve r handle
        | None -> () (* end of stream *)
      in
      fun client -> serve (Buf_read.of_fd client) print_endline
    ]}

    Every function blocks only the calling fiber while it waits for bytes, on
    the socket's loop thread, as {!Net.read_into} does. One fiber reads at a
    time. A call cancelled while it waits raises {!Braid.Cancelled} and loses
    nothing: the bytes already read stay buffered for the next call. *)

type t

exception Too_long of int
(** A line or a delimited piece longer than the maximum given (the maximum). *)

val of_fd : ?size:int -> Fd.t -> t
(** [of_fd fd] reads [fd] through a buffer of [size] bytes (default 4096), which
    grows only as far as a call's maximum needs. *)

val line : ?max:int -> t -> string option
(** [line ~max r] is the next line without its ["\n"] (and a ["\r"] before it),
    or [None] at end of stream with nothing buffered. A last line without a
    newline is returned as a line.

    Raises [Too_long max] if no newline comes within [max] bytes (default
    65536); the bytes stay buffered. Raises {!Braid_io.Io_error} as the read
    does. *)

val until : ?max:int -> t -> char -> string option
(** [until ~max r c] is the bytes before the next [c] (which is consumed), or
    [None] at end of stream with nothing buffered.

    Raises [Too_long max] as {!line} does; [End_of_file] if the stream ends
    inside a piece. *)

val exactly : t -> int -> string
(** [exactly r n] is the next [n] bytes.

    Raises [End_of_file] if the stream ends before them (the bytes read stay
    buffered). *)

val buffered : t -> int
(** [buffered r] is how many bytes were read and not consumed yet. *)

val take_buffered : t -> string
(** [take_buffered r] consumes and returns what is buffered, without reading. *)
