(** TLS over {!Braid_io} sockets, with OpenSSL.

    A server loads its certificates once into a {!Server_context.t} (and again
    to replace them: connections keep the context they were accepted with), then
    wraps each accepted socket with {!Connection.accept}; a client wraps a
    connected socket with {!Connection.connect}. Every operation suspends only
    the calling fiber while the socket is not ready, and runs on the socket's
    loop.

    Protocols: TLS 1.2 and 1.3 only. ALPN: a server answers [http/1.1] to a
    client that offers it. SNI: a server with several certificates presents the
    one whose names (subject alternative names, wildcards included) match the
    name the client asks for, else the first. Session resumption: TLS 1.3
    tickets and TLS 1.2 tickets and session IDs, with OpenSSL's defaults (two
    tickets per full handshake; keys per context, so a reload starts afresh). *)

exception Error of { op : string; reason : string }
(** A TLS failure: a failed handshake (an unsupported protocol version, no
    shared cipher, a bad certificate), a corrupt record, a peer's alert.
    [reason] is OpenSSL's. The connection is unusable afterwards. Socket errors
    raise {!Braid_io.Net.Error} instead. *)

module Server_context = Server_context
module Client_context = Client_context
module Connection = Connection
