(** TLS over {!Braid_io} sockets, with OpenSSL.

    A server loads its certificates once into a {!Server_context.t} (and again
    to replace them: connections keep the context they were accepted with), then
    wraps each accepted socket with {!Connection.accept}; a client wraps a
    connected socket with {!Connection.connect}. Every operation suspends only
    the calling fiber while the socket is not ready, and runs on the socket's
    loop.

    Protocols: TLS 1.2 and 1.3 only. ALPN: a server answers [h2] (if it serves
    HTTP/2, {!Server_context.load}) or [http/1.1] to a client that offers it.
    SNI: a server with several certificates presents the one whose names
    (subject alternative names, wildcards included) match the name the client
    asks for, else the first. Session resumption: TLS 1.3 tickets and TLS 1.2
    tickets and session IDs, with OpenSSL's defaults (two tickets per full
    handshake; keys per context, so a reload starts afresh). *)

(** {1 Errors}

    braid.io's one exception, {!Braid_io.Io_error}, is raised for TLS failures
    too: a failed handshake (an unsupported protocol version, no shared cipher,
    a bad certificate), a corrupt record, a peer's alert, a peer gone
    mid-handshake are [Io_error {op; error = eproto; detail}], with [op] one of
    ["handshake"], ["read"], ["write"] and [detail] OpenSSL's reason (or ours:
    ["connection closed by the peer"], ["connection already ended"]). The
    connection is unusable afterwards but for {!Connection.close}. Socket errors
    are the same exception with the socket's [errno] and [detail = ""] ([EBADF]
    once the socket is closed), so one handler takes both:
    {[
      let serve connection =
        match
          Braid_tls.Connection.read_into connection (Bytes.create 4096) 0 4096
        with
        | n -> Ok n
        | exception Braid_io.Io_error { error; detail; _ }
          when error = Braid_tls.eproto ->
            Error ("TLS: " ^ detail)
        | exception (Braid_io.Io_error _ as e) ->
            Error (Option.get (Braid_io.error_message e))
    ]} *)

val eproto : Unix.error
(** [EPROTO] ("Protocol error") as the [Unix] library represents it: its [error]
    type has no constructor for it, so it is [EUNKNOWNERR] of the system's
    number (71 on Linux). The [error] of every TLS failure; a TCP socket itself
    never reports it. *)

module Server_context = Server_context
module Client_context = Client_context
module Connection = Connection

(** {1 Passwords} *)

module Password = Password

(** {1 Development} *)

module Dev_certificate = Dev_certificate
