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

(** What runs when the server is done with a request ({!at_end}). *)
module Ending : sig
  type t

  val create : unit -> t
  (** For a server, and a test that calls handlers itself: a new exchange's. *)

  val finished : t
  (** An exchange already over: {!at_end} on it runs the action at once. *)

  val run : t -> unit
  (** [run t] ends the exchange: runs the actions registered, oldest first, once
      (later calls do nothing, and an action registered afterwards runs at
      once). An action that raises is skipped over. In the calling fiber; as
      long as the actions take. *)
end

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
  secure : bool;
      (** The request came over TLS (HTTPS, or HTTP/2 negotiated over TLS): the
          scheme a proxy reports in [X-Forwarded-Proto]. *)
  body : Body.t;
  now : float;  (** When the head was read, seconds since the epoch. *)
  ending : Ending.t;  (** See {!at_end}. *)
}

type t = request -> Response.t

val at_end : request -> (unit -> unit) -> unit
(** [at_end r action] has the server run [action ()] once it is done with [r]:
    its response sent whole, or never to be (a [HEAD] or a status without
    content, a middleware that answered something else, the connection lost
    before the head went out, the handler cancelled by its timeout or the
    server's shutdown). So a handler whose response holds a resource that its
    stream would release ([Braid_proxy]'s upstream connection) releases it even
    if the stream never runs.

    [action] runs in the connection's fiber (the HTTP/2 stream's), possibly
    while it unwinds from a cancellation: it must not block; what it raises is
    ignored. Call [at_end] from the fiber serving [r] or one it forked (the same
    loop), not from a pool task. *)

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
  ?secure:bool ->
  ?body:string ->
  string ->
  request
(** [request_for_test target] is an HTTP/1.1 request for calling a handler
    directly in a test: no peer, time 0, an {!Ending} of its own (the test runs
    it, {!Ending.run}, when it is done with the response). A handler that uses
    services needs them in force ({!In_memory.run}). *)
