(** A connection taken over after a [101 Switching Protocols] response
    ({!Response.upgrade}): raw reads and writes on the socket, the bytes the
    server had already read past the request head first.

    The upgrade callback runs in the connection's fiber, outside the
    request/response cycle: no handler timeout applies to it, the connection
    still counts against [max_connections] (it is never taken for an idle one),
    the send timeout still applies to each write (a peer that stops reading is
    cut off: the blocked write raises {!Braid.Cancelled}), and the connection
    closes when the callback returns. A graceful shutdown
    ([Braid_server.Server.shutdown]) makes {!read} raise {!Shutdown}: the
    callback says goodbye in its protocol and returns; at the shutdown deadline
    the fiber is cancelled.

    A value is valid only while its callback runs; fibers the callback forks may
    use it (under a {!Braid.Switch} the callback waits for) but not after it
    returned: then every function raises [Invalid_argument]. At most one fiber
    may read and one write at a time (a protocol serialises its writes itself,
    as {!Websocket} does). Every function blocks only the calling fiber. *)

type t

exception Shutdown
(** Raised by {!read} once the server is shutting down gracefully: no more input
    is read; writes still work until the shutdown deadline. *)

val read : t -> bytes -> int -> int -> int
(** [read t buf off len] writes at most [len] bytes at [buf.[off]] and returns
    how many, at least one, or [0] at end of stream (the peer closed its side).
    Bytes the server buffered before the upgrade come first. Blocks the fiber
    until bytes arrive; no timeout of its own (use [Services.timeout]).

    Raises [Invalid_argument] if [off] and [len] are not a valid slice of [buf],
    or another fiber is reading. Raises {!Shutdown} (see above) when it would
    block and the server shuts down, and the socket's error (a
    [Braid_io.Io_error]) on a reset: let it through, the connection ends.
    @raise Braid.Cancelled if the fiber is cancelled. *)

val write : t -> string -> unit
(** [write t s] sends all of [s]; blocks the fiber while the socket is full.

    Raises [Invalid_argument] if another fiber is writing, the socket's error on
    a reset.
    @raise Braid.Cancelled
      if the fiber is cancelled, or the send timeout expired. *)

val write_bytes : t -> bytes -> int -> int -> unit
(** [write_bytes t buf off len] is {!write} of a slice. *)

val buffered : t -> int
(** Bytes read before the upgrade and not yet returned by {!read}. *)

val peer : t -> Unix.sockaddr option
(** The client's address; [None] when not on a socket. *)

val shutting_down : t -> bool
(** [true] once the server is shutting down. *)

(** {1 For the server and tests} *)

val make :
  ?peer:Unix.sockaddr ->
  ?buffered:string ->
  ?shutting_down:(unit -> bool) ->
  read:(bytes -> int -> int -> int) ->
  write:(bytes -> int -> int -> unit) ->
  unit ->
  t
(** [make ~read ~write ()] is a connection over [read] (at least one byte, [0]
    at end of stream) and [write] (sends everything), [buffered] to be read
    first. [shutting_down] (default never) is checked before each read that
    would call [read]. *)

val finish : t -> unit
(** [finish t] ends [t]'s validity: its callback returned. *)

val failed_io : t -> exn -> bool
(** [failed_io t e] is true if [e] was raised by [t]'s own [read] or [write]
    (the connection failed, not the protocol's code). *)
