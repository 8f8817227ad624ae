(** Braid's application layer: what a web application writes against.

    Handlers ({!Handler}) turn a request into a {!Response}; a {!Router} maps
    methods and path patterns to them, with middleware ({!Router.use}) that sees
    every response and a page for the server's own errors ({!Router.on_error});
    static files come from a {!Static.handler} route. The request helpers
    ({!Query}, {!Form}, {!Multipart}, {!Cookie}, {!Json}) read what browsers and
    API clients send, answering bad input with a [4xx]; {!Websocket} speaks
    WebSocket over an upgraded connection. docs/web-apps.md is the guide.

    {b Cross-cutting services are effects.} Logging ({!Log}), the clock (time,
    sleeps, timeouts), file access and the handler store are {!Services}: any
    code under a server calls them, and the handler in force answers, in the
    request handler's fiber, in the fibers it forks and in the pool tasks it
    submits. The server ([braid_server]: [Braid_server.Real_services])
    implements them for real, {!In_memory} for tests (no sockets, disks or real
    time), and one can be swapped alone.

    No module here touches a socket, a loop or a connection: the engine that
    serves these handlers is [braid_server]'s.

    {[
      let hello (_ : Braid_web.Handler.request) =
        Braid_web.Response.string "hello\n"

      let routes = Braid_web.Router.(empty |> add GET "/" hello)
    ]} *)

module Response : sig
  include module type of struct
      include Response
    end
    with module Private := Response.Private
end

module Body = Body
module Handler = Handler
module Router = Router

(** {1 Request helpers}

    Each answers [(value, Response.t) result], the error being the [4xx] the
    client deserves; {!Handler.Syntax} chains them. *)

module Query = Query
module Form = Form
module Cookie = Cookie
module Json = Json
module Multipart = Multipart

(** {1 Files and connections beyond HTTP} *)

module Static = Static
module Upgraded = Upgraded
module Websocket = Websocket
module Hub = Hub

(** {1 Services as effects} *)

module Services = Services
module Log_event = Log_event
module Log = Log
module File = File
module Spool_budget = Spool_budget
module In_memory = In_memory

(** {1 Security and HTML}

    Random tokens from the kernel, values and cookies signed with HMAC-SHA256
    (see also {!Cookie.set_signed}) or encrypted with AES-256-GCM
    ({!Cookie.set_encrypted}), escaping for HTML. Password hashing needs
    OpenSSL, so it is in [braid_tls] ([Braid_tls.Password]). *)

module Token = Token
module Signed = Signed
module Encrypted = Encrypted
module Html = Html

(** {1 Per-request fields, sessions, CSRF, flash messages}

    Middleware attaches values to the request it passes on with {!Field};
    {!Session.middleware} keeps a session per browser (in memory, in an
    encrypted cookie, or in a database through {!Session.of_backend}); {!Csrf}
    tokens are checked by {!Form.urlencoded} and {!Multipart.fold} under a
    session; {!Flash} messages go from one request to the next. *)

module Field = Field

module Session : sig
  include module type of struct
      include Session
    end
    with module Private := Session.Private
end

module Csrf = Csrf
module Flash = Flash

(** {1 For the engine}

    What [braid_server]'s pipeline uses beyond the application's face. Not for
    applications: no stability is promised. *)

module Private : sig
  module Head_cache = Head_cache
end
