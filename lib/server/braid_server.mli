(** Braid's HTTP/1.1 server.

    {b Building a server.} Handlers ({!Handler}) turn a request into a
    {!Response}; a {!Router} maps methods and path patterns to them; static
    files come from {!Config.root} or a {!Static.handler} route; {!Server}
    listens, with one event loop per domain. The request helpers ({!Query},
    {!Form}, {!Multipart}, {!Cookie}, {!Json}) read what browsers and API
    clients send, answering bad input with a [4xx]; {!Router.use} adds
    middleware that sees every response, {!Router.on_error} renders the server's
    own errors, and {!Testing.call} runs a request through it all in memory.
    docs/web-apps.md is the guide.

    {b Cross-cutting services are effects.} Logging ({!Log}), the clock (time,
    sleeps, timeouts), file access and the handler store are {!Services}: any
    code under a server calls them, and the handler in force answers, in the
    request handler's fiber, in the fibers it forks and in the pool tasks it
    submits. {!Production} implements them for real, {!In_memory} for tests (no
    sockets, disks or real time), and one can be swapped alone.

    {[
      let hello (_ : Braid_server.Handler.request) =
        Braid_server.Response.string "hello\n"

      let main () =
        let open Braid_server in
        let router = Router.empty |> Router.add GET "/" hello in
        match
          Server.create ~settings:(Production.settings router) Config.default
        with
        | Ok server -> Server.run server
        | Error msg -> prerr_endline msg
    ]} *)

module Server_private := Server.Private
module Response_private := Response.Private

(** {1 Applications} *)

module Response : sig
  include module type of struct
      include Response
    end
    with module Private := Response.Private
end

module Body = Body

(** {2 Request helpers}

    Each answers [(value, Response.t) result], the error being the [4xx] the
    client deserves; {!Handler.Syntax} chains them. *)

module Query = Query
module Form = Form
module Cookie = Cookie
module Json = Json
module Multipart = Multipart
module Static = Static
module Testing = Testing
module Upgraded = Upgraded
module Websocket = Websocket
module Handler = Handler
module Router = Router
module Log_event = Log_event
module Log = Log

(** {1 Services as effects} *)

module File = File
module Services = Services
module Production = Production
module In_memory = In_memory
module Log_writer = Log_writer

(** {1 Serving} *)

module Config = Config
module Systemd = Systemd
module Metrics = Metrics
module Spool_budget = Spool_budget
module Handover = Handover

module Server : sig
  include module type of struct
      include Server
    end
    with module Private := Server.Private
end

(** {1 For Braid's tests and benchmarks}

    The pipeline's internals, exposed for testing them without sockets and for
    the effects-versus-direct-calls experiment. Not for applications: no
    stability is promised. *)

module Private : sig
  module Server = Server_private
  module Response = Response_private
  module Pipeline = Pipeline
  module Connection = Connection
  module Date_cache = Date_cache
  module Static = Static
  module Output = Output
end
