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
    forks fibers must be called inside a Braid scheduler.

    {!Client} is a browser for such tests: a cookie jar, the CSRF token of the
    last page, forms, redirects. {!Websocket_client} opens WebSocket connections
    to the application, in memory too, and talks to them. With [~files:`Disk],
    the static files come from the real file system, where an upload written
    with [Braid_io.File] went. *)

open Braid_web

type files = [ `Memory | `Disk ]
(** Where the static files ({!Config.t.root}, {!Braid_web.Static}) are read
    from: [`Memory], the {!Braid_web.In_memory} file system; [`Disk], the real
    one (as [Braid_server.Real_services] reads it, with no file cache), the rest
    of the services (clock, log) staying in memory. *)

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
  ?files:files ->
  Router.t ->
  string ->
  response
(** [call router target] is the server's answer to an HTTP/1.1 request for
    [target] (["/path?query"]) with method [meth] (default [GET]), fields
    [headers] (a [Host] is added if missing, a [Content-Length] when [body] is
    given) and [body] (default none). [config] (default {!Config.default}) gives
    the limits and the document root, whose files are those of [memory] (default
    an empty file system), or of the disk with [files] [`Disk] (default
    [`Memory]); [router] answers whatever [memory] was created with. [memory]
    also keeps the log ({!Braid_web.In_memory.events}).

    An upgrade ({!Braid_web.Response.upgrade}, {!Braid_web.Websocket.accept})
    gives its [101], with as [body] the raw bytes the upgraded protocol wrote:
    it runs at once, and sees the end of the input after the request's head (for
    a WebSocket, the frames [f] sent, unmasked, then a close frame). No client
    speaks to it.

    Raises [Failure] if the server's answer is not one complete response (a bug
    of the server). *)

(** {1 A browser}

    A client that keeps what a browser keeps between requests, for tests of
    log-ins, sessions and forms:

    {[
      let login request =
        Braid_web.Response.redirect ~status:303 "/me"
        |> Braid_web.Cookie.set ~path:"/" "user" "ada"
      in
      let me request =
        match Braid_web.Cookie.get request "user" with
        | Ok (Some user) -> Braid_web.Response.string user
        | _ -> Braid_web.Response.error 401 "log in"
      in
      let app =
        Braid_web.Router.(empty |> post "/login" login |> get "/me" me)
      in
      let browser = Testing.Client.create app in
      let r = Testing.Client.post_form browser "/login" [ ("user", "ada") ] in
      assert ((Testing.Client.follow browser r).body = "ada")
    ]} *)

module Client : sig
  type t
  (** A browser's state for one site: the cookie jar and the last page's CSRF
      token. Safe to share between fibers and domains (each request reads and
      updates the state atomically); requests run as {!call} runs them. *)

  val create :
    ?config:Config.t ->
    ?memory:In_memory.t ->
    ?files:files ->
    ?https:bool ->
    ?host:string ->
    Router.t ->
    t
  (** [create router] is a browser with an empty jar visiting [router]'s site at
      [host] (default ["test"], sent as [Host]). [config], [memory] and [files]
      are {!call}'s, for every request. The jar's clock is [memory]'s:
      {!Braid_web.In_memory.advance} expires cookies.

      [https] (default [true]): whether the site is taken for an HTTPS origin,
      as a site in production is. Then [Secure] cookies are kept and sent, and
      the [Origin] the client sends is [https://host]. With [~https:false], a
      [Secure] cookie is refused as a browser refuses one received over plain
      HTTP. The server itself is not told: the requests reach it as from a proxy
      that ended TLS. *)

  val memory : t -> In_memory.t
  (** The services' memory: the log, the clock, the in-memory files. *)

  val call :
    t ->
    ?meth:Braid_http.Method.t ->
    ?headers:(string * string) list ->
    ?body:string ->
    string ->
    response
  (** [call t target] is {!val-call} with what a browser adds: [Host], the jar's
      [Cookie] field (cookies whose path matches the target's, unexpired,
      longest path first), and for a method other than GET, HEAD and OPTIONS an
      [Origin] of the site; a field given in [headers] is not added again. Then
      the response's [Set-Cookie] fields update the jar as RFC 6265 says
      (replacing by name and path; [Max-Age], else [Expires]; deletion by a past
      date or a [Max-Age] of 0; [Path] defaulting to the target's directory; a
      [Domain] other than the host's ignored), and an HTML response
      ([text/html]) sets {!csrf_token}. Redirects are not followed: see
      {!follow}. Blocks as {!val-call}. *)

  val get : t -> ?headers:(string * string) list -> string -> response

  val post :
    t ->
    ?headers:(string * string) list ->
    ?content_type:string ->
    ?body:string ->
    string ->
    response
  (** [post t target] is a POST of [body] (default empty) as [content_type]. *)

  val post_form :
    t ->
    ?headers:(string * string) list ->
    string ->
    (string * string) list ->
    response
  (** [post_form t target fields] posts [fields] urlencoded, as a browser
      submits a form, with the field [csrf_token] added from {!csrf_token} when
      there is one and [fields] has none. *)

  val follow : t -> response -> response
  (** [follow t r] is [r] unless it is a [301], [302] or [303] with a [Location]
      on this site (a path, or an absolute URL of the same origin): then the
      answer to a GET of it, itself followed, up to 10 redirects. *)

  val csrf_token : t -> string option
  (** The CSRF token of the last HTML response: the value of its first
      [<input name="csrf_token">], or else the [content] of its
      [<meta name="csrf-token">], character references decoded; [None] if it had
      neither. Scanned as HTML (quotes of either kind or none, attributes in any
      order, comments and scripts skipped), without regular expressions. *)

  val cookie : t -> string -> string option
  (** The value of the newest unexpired cookie [name] in the jar. *)

  val cookies : t -> (string * string) list
  (** The jar's unexpired cookies, oldest first. *)

  val set_cookie : t -> ?path:string -> string -> string -> unit
  (** [set_cookie t name value] puts a cookie in the jar, as if a page had set
      it (no expiry, path [path], default ["/"]). *)

  val remove_cookie : t -> string -> unit
  (** Every cookie of this name leaves the jar. *)
end

(** {1 WebSocket}

    A WebSocket client for tests, connected in memory to the application through
    the whole server (the handshake goes through the router and the middleware;
    the frames through {!Braid_web.Websocket}). Each connection's server side
    runs in a fiber of its own, so a test opens several and sees a message sent
    on one reach the others:

    {[
      let echo request =
        Braid_web.Websocket.accept request (fun ws ->
            match Braid_web.Websocket.receive ws with
            | `Text s -> Braid_web.Websocket.send_text ws ("echo: " ^ s)
            | _ -> ())
      in
      let client =
        Testing.Client.create Braid_web.Router.(empty |> get "/echo" echo)
      in
      Braid_fifo.run (fun () ->
          match
            Testing.Websocket_client.connect client "/echo" (fun ws ->
                Testing.Websocket_client.send_text ws "hi";
                Testing.Websocket_client.receive ws)
          with
          | Ok (`Text reply) -> assert (reply = "echo: hi")
          | _ -> assert false)
    ]}

    Needs a Braid scheduler ([Braid_fifo.run], [Braid_io.run], a pool): the
    client and the server are fibers that wait for each other. The application's
    clock is the client's memory's, so its idle timeouts expire only with
    {!Braid_web.In_memory.advance}. *)

module Websocket_client : sig
  type t
  (** One connection. Used by one fiber at a time. *)

  type message = [ `Text of string | `Binary of string | `Close of int * string ]

  val connect :
    ?headers:(string * string) list ->
    Client.t ->
    string ->
    (t -> 'a) ->
    ('a, response) result
  (** [connect client target f] sends a WebSocket handshake for [target] (with
      the client's [Host], cookies and [Origin], and [headers]) and, if the
      server answers [101], runs [f] on the connection, [Ok] of its result; else
      [Error] the server's answer. The response's cookies go to the client's
      jar.

      When [f] returns without the connection being closed, it is closed as a
      browser leaving the page does (code [1001]) and the server's close
      awaited; when [f] raises, the connection ends without a close (the
      application sees [`Close (1006, "")]) and the exception comes out. Either
      way [connect] returns once the server's side has finished: the
      application's callback must return once its connection is closed. Blocks
      the calling fiber; cancelling it cancels the server's side.

      Raises [Failure] if the [101] has a wrong [Sec-WebSocket-Accept], and the
      server's exceptions. *)

  val send_text : t -> string -> unit
  (** A text frame, masked as a client's. Blocks the fiber only while 64 writes
      wait unread.

      Raises [Invalid_argument] once a close frame was sent. *)

  val send_binary : t -> string -> unit

  val receive : t -> message
  (** The next message from the server (fragments joined; pings answered, pongs
      skipped), or [`Close (code, reason)] once it sent a close frame (which is
      answered) or ended the connection ([1006]), and from then on. Blocks the
      fiber until then.

      Raises [Failure] on a frame a server must not send (masked, out of
      sequence). *)

  val close : ?code:int -> ?reason:string -> t -> int * string
  (** [close t] sends a close frame ([code] default [1000], [reason] default
      empty), unless one was sent, and drops messages until the server's close:
      its code and reason ([1006] if the connection ended without). *)
end
