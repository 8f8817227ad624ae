(** What a TLS client trusts and offers. Immutable; any domain may share one. *)

type t

val create :
  ?verify:bool ->
  ?ca_file:string ->
  ?alpn:string list ->
  unit ->
  (t, string) result
(** [create ()] is a client context for TLS 1.2 and 1.3 that verifies the
    server's certificate chain against the system's trusted certificates, or
    only those of [ca_file] (a PEM file) if given. [~verify:false] accepts any
    certificate (for tests against self-signed servers: never in production).
    [alpn]: the protocols offered (none by default). An unreadable [ca_file] is
    an [Error]. *)

(**/**)

val context : t -> Ssl.context
val verifies : t -> bool
val alpn : t -> string list
