(** Internal to [braid_client]: one connection to an origin, plain or TLS, with
    the input its responses are parsed from. Belongs to the loop of the fiber
    that opened it: every function but {!close} must be called from a fiber of
    that loop, and blocks only that fiber. *)

type t

val connect :
  sw:Braid.Switch.t -> tls:Braid_tls.Client_context.t Lazy.t -> Url.t -> t
(** [connect ~sw ~tls url] resolves [url]'s host, connects to its first
    reachable address and, for [https], runs the TLS handshake with SNI and (if
    [tls] verifies) the certificate checked against the host. The socket is
    owned by [sw].
    @raise Braid_io.Net.Unknown_host if the host has no address.
    @raise Braid_io.Io_error
      if no address can be reached or the handshake fails ([eproto]).
    @raise Braid.Cancelled if the fiber is cancelled (nothing left open). *)

val input : t -> Braid_http.Input.t
(** Where responses are read from; it keeps bytes read past a response for the
    next. *)

val read : t -> bytes -> int -> int -> int
(** [read t buf off len] reads at most [len] bytes, those {!input} holds first
    (read past the last response), else from the socket: at least one, [0] at
    the end of the stream. For a connection whose protocol switched.
    @raise Braid_io.Io_error on a socket or TLS failure. *)

val read_socket : t -> bytes -> int -> int -> int
(** [read_socket t buf off len] reads from the socket (through TLS), leaving
    what {!input} holds alone: for a caller that has taken those bytes first and
    knows the next ones are its own (the rest of a body of known length). Blocks
    the fiber until some bytes come; [0] at the end of the stream.
    @raise Braid_io.Io_error on a socket or TLS failure. *)

val set_before_wait : t -> (unit -> unit) -> unit
(** [set_before_wait t f]: from then on, a read of the socket ({!input}'s
    refills, {!read_socket}) that is about to wait for bytes calls [f] first (in
    the reading fiber). Default: nothing. *)

val read_now : t -> bytes -> int -> int -> int
(** [read_now t buf off len] is {!read_socket} that never waits: [-1] if no byte
    can be had now (the loop has seen nothing arrive since the socket was last
    found empty, or the read would block; always on TLS, whose records are not
    worth splitting for this). So bytes already arrived can be gathered into one
    larger write without holding back any that must go out now.
    @raise Braid_io.Io_error on a socket failure. *)

val may_have_input : t -> bool
(** [may_have_input t] is [false] when a read would wait: the socket was last
    found empty and the loop has seen nothing arrive since (and TLS holds no
    decrypted byte). Never blocks. *)

val write : t -> string -> unit
(** [write t s] sends [s] whole.
    @raise Braid_io.Io_error on a socket or TLS failure. *)

val write_bytes : t -> bytes -> int -> int -> unit

val close : t -> unit
(** [close t] ends TLS (a close_notify, without waiting) and closes the socket.
    Idempotent; never blocks; any thread. *)

val is_open : t -> bool

val looks_reusable : t -> bool
(** [looks_reusable t] checks an idle connection before it is reused, without
    blocking: open, nothing unread, and the server has not closed its side (a
    non-blocking peek of the socket). A TLS connection whose socket has bytes
    waiting (a session ticket, a close_notify) is given the benefit of the
    doubt: the caller retries on a fresh connection a request that a reused one
    fails before any byte of the response. *)

val idle_since : t -> int
(** The monotonic time (ns) it was last returned to its pool. *)

val set_idle_since : t -> int -> unit

val requests : t -> int
(** How many requests it has carried. *)

val count_request : t -> unit
