(** A TLS connection over a connected {!Braid_io.Net.socket}.

    Every operation runs on the socket's loop, in a fiber, and suspends only
    that fiber while the socket is not ready. Reads and writes count against
    {!Braid_io.Fd.io_budget} as plain ones do. Each step of a handshake first
    waits behind the loop's other work ({!Braid_io.yield_background}): a flood
    of handshakes delays other connections by a few steps per turn of the loop,
    not by all of them. One fiber may read while another writes. Cancelling a
    blocked operation leaves the connection usable for {!close} only (a
    handshake, or a record, may be half done).

    The socket stays its owner's: {!close} ends the TLS session and frees its
    state, and the owner closes the socket (or its switch does). *)

type t

val eproto : Unix.error
(** See {!Braid_tls.eproto}. *)

val accept : Server_context.t -> Braid_io.Net.socket -> t
(** [accept context socket] runs the server's side of the handshake on [socket]
    (just accepted) with [context]'s certificates. Bound it with a timeout
    ({!Braid.Switch} or the server's services) against clients that never send a
    ClientHello.
    @raise Braid_io.Io_error
      with {!Braid_tls.eproto} if the handshake fails (the TLS state is freed),
      or a socket's error.
    @raise Braid.Cancelled if the fiber is cancelled (the TLS state is freed).
*)

val server :
  ?on_handshake:(t -> unit) ->
  ?received:bytes * int * int ->
  Server_context.t ->
  Braid_io.Net.socket ->
  t
(** [server context socket] is {!accept} with the handshake deferred: it runs at
    the first {!read_into}, {!write_all}, {!await_input} or {!handshake} (which
    raise as {!accept} does if it fails, and leave the TLS state to {!close}). A
    server can thus count a connection that has not finished its handshake among
    those waiting for their first request, under the same deadline, and close it
    to admit others. [on_handshake] is called once the handshake completes.

    [received = (buf, off, len)]: the connection's first [len] bytes, at [off]
    in [buf], which the caller read from [socket] itself ({!receive_first}):
    OpenSSL takes them (copied) before it reads the socket. A server's
    connection reads the socket in blocks of 4 KiB (or straight into OpenSSL's
    buffer for reads as large), not record by record: a ClientHello is one
    system call; what a block holds beyond what OpenSSL asked for counts in
    {!buffered}. Never blocks. Raises [Invalid_argument] if [off] and [len] are
    not a range of [buf]. *)

val receive_first :
  Braid_io.Net.socket ->
  bytes ->
  int ->
  int ->
  [ `Received of int | `Nothing | `Ended ]
(** [receive_first socket buf off len] reads at most [len] bytes of [socket]
    into [buf] at [off] without waiting: a connection's first bytes, which a
    server reads to tell a TLS client from another (a plain HTTP request) and
    then gives to {!server} as [received]. [`Received n] with [n > 0];
    [`Nothing] if none has come yet (the loop is told: the next
    {!Braid_io.Fd.await_input} waits); [`Ended] at the end of the stream, on an
    error, or if the socket is closed. One [recv] system call, no exception. On
    the socket's loop. Raises [Invalid_argument] if [off] and [len] are not a
    range of [buf], or [len] is 0. *)

val handshake : t -> unit
(** [handshake t] completes [t]'s handshake if it has not yet, as {!server}
    says. *)

val handshaken : t -> bool
(** Whether [t]'s handshake has completed. *)

val connect : ?host:string -> Client_context.t -> Braid_io.Net.socket -> t
(** [connect ~host context socket] runs the client's side of the handshake.
    [host] is sent as SNI (unless it is an IP address) and, if [context]
    verifies, the server's certificate must name it. Raises as {!accept}. *)

val read_into : t -> bytes -> int -> int -> int
(** [read_into t buf off len] reads at most [len] decrypted bytes into [buf] at
    [off], and returns how many; [0] at the end of the stream (a close_notify,
    or the peer closing the socket without one, as HTTP/1.1 clients do), or if
    [len = 0].
    @raise Braid_io.Io_error
      with {!Braid_tls.eproto} on a corrupt record or an alert, or a socket's
      error ([EBADF] once it is closed). *)

val write_all : t -> bytes -> int -> int -> unit
(** [write_all t buf off len] encrypts and sends the [len] bytes at [off].
    @raise Braid_io.Io_error
      with {!Braid_tls.eproto} if the peer is gone or the connection failed, or
      a socket's error. *)

val write_string : t -> string -> unit

val await_input : t -> unit
(** [await_input t] returns when a read may find data: at once if decrypted or
    received bytes are buffered, else as {!Braid_io.Fd.await_input}. *)

val pending : t -> bool
(** Whether decrypted bytes wait in [t], which a read returns at once. Bytes of
    an incomplete record it has read ahead do not count: a peer that sends part
    of a record and stops has sent nothing readable. *)

val buffered : t -> bool
(** Whether [t] holds bytes read from the socket that a read would process:
    decrypted ones, or records (whole or part of one) read ahead. A wait for the
    socket's readiness would not see them: a caller that waits for input without
    {!await_input} asks this first. *)

val close : t -> unit
(** [close t] sends a close_notify alert if the connection is healthy (without
    waiting for the peer's, and without blocking: if the socket is full, the
    alert is dropped) and frees the TLS state. Idempotent; later operations
    raise [Invalid_argument]. *)

val socket : t -> Braid_io.Net.socket

val version : t -> string
(** ["TLSv1.3"] or ["TLSv1.2"]. *)

val cipher : t -> string
(** The negotiated cipher suite, in OpenSSL's name (["TLS_AES_256_GCM_SHA384"]).
*)

val alpn : t -> string option
(** The protocol agreed by ALPN, if any. *)

val server_name : t -> string option
(** The name the client asked for by SNI, if any. *)

val resumed : t -> bool
(** Whether the handshake resumed an earlier session (a ticket or a session ID)
    instead of a full handshake. *)
