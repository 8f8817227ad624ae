(** What a TLS server presents: its certificates and private keys, loaded from
    PEM files. Immutable once loaded; any domain may share one. *)

type t

type certificate = {
  chain : string;
      (** A PEM file: the certificate, then its intermediate certificates. *)
  key : string;  (** A PEM file: the certificate's private key (unencrypted). *)
}

val default_ciphers : string
(** The TLS 1.2 cipher suites offered: ECDHE key exchange with AES-GCM or
    ChaCha20-Poly1305 only (forward secrecy, authenticated encryption), the
    server's preference first. TLS 1.3 uses OpenSSL's suites (all of them AEAD).
*)

val load :
  ?ciphers:string -> ?http2:bool -> certificate list -> (t, string) result
(** [load certificates] reads every certificate and key, checks that each key
    matches its certificate, and is the context presenting them: the first is
    the default, the others are chosen by SNI. Reads files (blocks the calling
    thread briefly: at start and on reload). An empty list, an unreadable or
    malformed file, a key that does not match, or bad [ciphers] (default
    {!default_ciphers}) is an [Error] naming the file and the reason.

    ALPN: the server chooses [h2] when the client offers it and [http2] is
    [true] (default [false]: HTTP/2 is the caller's to serve), else [http/1.1]
    if offered, else answers nothing. *)

val certificates : t -> certificate list
(** The files [t] was loaded from, the default first. *)

(**/**)

val default : t -> Ssl.context
(** The context new connections start with (for {!Connection}). *)
