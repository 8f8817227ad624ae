(** Calling an application in memory, for tests: one request through the whole
    server (the parser, the router with its parameters, the middleware, error
    pages, static files, the framing) to a response whose body is a string. No
    socket, disk or real time: the services are {!Braid_web.In_memory}'s.

    {[
      let hi request =
        Braid_web.Response.string
          ("hello " ^ Option.get (Braid_web.Handler.param request "name"))
      in
      let app = Braid_web.Router.(empty |> get "/hi/:name" hi) in
      let r = Braid_server.Testing.call app "/hi/ada" in
      assert (r.status = 200 && r.body = "hello ada")
    ]}

    Runs the exchange in the calling thread, which it blocks until the response
    is complete. A handler that computes, reads its body, streams or awaits pool
    work needs nothing more (awaiting blocks the thread); one that sleeps or
    forks fibers must be called inside a Braid scheduler. *)

open Braid_web

type response = {
  status : int;
  headers : (string * string) list;  (** In order, as the server sent them. *)
  body : string;  (** De-chunked; [""] for HEAD, 204 and 304. *)
}

val header : response -> string -> string option
(** [header r name] is the first field [name] (case-insensitively). *)

val headers : response -> string -> string list
(** [headers r name] is every field [name], in order. *)

val call :
  ?meth:Braid_http.Method.t ->
  ?headers:(string * string) list ->
  ?body:string ->
  ?config:Config.t ->
  ?memory:In_memory.t ->
  Router.t ->
  string ->
  response
(** [call router target] is the server's answer to an HTTP/1.1 request for
    [target] (["/path?query"]) with method [meth] (default [GET]), fields
    [headers] (a [Host] is added if missing, a [Content-Length] when [body] is
    given) and [body] (default none). [config] (default {!Config.default}) gives
    the limits and the document root, whose files are those of [memory] (default
    an empty file system); [router] answers whatever [memory] was created with.
    [memory] also keeps the log ({!Braid_web.In_memory.events}).

    An upgrade ({!Braid_web.Response.upgrade}, {!Braid_web.Websocket.accept})
    gives its [101], with as [body] the raw bytes the upgraded protocol wrote:
    it runs at once, and sees the end of the input after the request's head (for
    a WebSocket, the frames [f] sent, unmasked, then a close frame). No client
    speaks to it.

    Raises [Failure] if the server's answer is not one complete response (a bug
    of the server). *)
