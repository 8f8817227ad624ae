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
