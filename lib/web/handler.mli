(** Request handlers: a function from the request in context to a response.

    A handler runs in the connection's fiber. It may block that fiber (read the
    body, await a {!Braid_sync.Promise} filled by a pool task, sleep); the event
    loop serves other connections meanwhile. It must not block the domain for
    long (heavy computation belongs on a [Braid_pool]). An exception from a
    handler becomes a [500] response and an error log event; the connection
    stays usable.

    The server's services ({!Services}, {!Log}) are in force in the handler, in
    every fiber it forks and in every pool task it submits: any of them can log,
    read the clock, sleep and read files. *)

type request = {
  head : Braid_http.Request.t;  (** Method, target, version, header fields. *)
  path : string;  (** The target's path, not decoded. *)
  query : string option;  (** After ["?"], not decoded. *)
  params : (string * string) list;
      (** Pattern parameters, decoded: [("n", "10")] for [/fib/:n]. *)
  tail : string option;
      (** The part of [path] a trailing [*name] of the route's pattern matched,
          as sent (not decoded), with its leading ["/"]: ["/css/a.css"] for
          [/assets/*rest] and [/assets/css/a.css]. [None] for a pattern without
          [*name], and outside routes (global middleware). *)
  peer : Unix.sockaddr option;  (** [None] when not on a socket. *)
  body : Body.t;
  now : float;  (** When the head was read, seconds since the epoch. *)
}

type t = request -> Response.t

val param : request -> string -> string option
(** [param r name] is the value of pattern parameter [name]. *)

val header : request -> string -> string option
(** [header r name] is the first request field [name]. *)

val body_string : request -> (string, Braid_http.Parse_error.t) result
(** [body_string r] is {!Body.to_string} [r.body]. *)

val bad_request : Braid_http.Parse_error.t -> Response.t
(** [bad_request e] is the response a body that could not be read deserves:
    {!Response.error} [e.status e.reason] (a [400], [408] or [413]), or a [503]
    with [Retry-After] for a body refused because the server's spool budget is
    spent ({!Body.to_string}). *)

(** Handlers that stop at the first error: the helpers ([Query], [Cookie],
    [Json], [Form]) answer [(value, Response.t) result], the error being the
    [4xx] the client deserves.
    {[
      open Braid_web.Handler.Syntax

      let hello r =
        let* name = Braid_web.Query.get r "name" in
        Braid_web.Response.string (Option.value name ~default:"world")
    ]} *)
module Syntax : sig
  val ( let* ) : ('a, Response.t) result -> ('a -> Response.t) -> Response.t
  (** [let* x = r in f x] is [f x] when [r] is [Ok x], the response when [r] is
      [Error response]. *)
end

val request_for_test :
  ?meth:Braid_http.Method.t ->
  ?headers:(string * string) list ->
  ?params:(string * string) list ->
  ?tail:string ->
  ?body:string ->
  string ->
  request
(** [request_for_test target] is an HTTP/1.1 request for calling a handler
    directly in a test: no peer, time 0. A handler that uses services needs them
    in force ({!In_memory.run}). *)
