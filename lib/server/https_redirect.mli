(** The redirect of plain HTTP to HTTPS ([config.tls.redirect]): the handler
    store of the plain listener's connections while it is on. Internal to the
    server.

    Pure: the handler reads only its request, and the store is a value. *)

open Braid_web

val routes : port:int -> Braid_http.Method.t -> string -> Router.found
(** [routes ~port] is the store whose only route answers every method and every
    path, under the configuration's body limit (a POST's body is no reason to
    refuse the redirect: 308 keeps it), with [308 Permanent Redirect] (the
    method and body kept) to the same target over HTTPS on [port], at the host
    the client named, without its port: the target's own authority for an
    absolute-form target (RFC 9112 §3.2.2: the [Host] field is then ignored),
    else [Host]. [400] without a host (an empty [Host], or none from an HTTP/1.0
    client: RFC 9110 §4.2.2 forbids the empty host of an https URI, and a guess
    would send the client elsewhere) or with a bad one. *)
