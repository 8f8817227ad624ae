(** Braid's HTTP/1.1 server.

    {b Building a server.} Handlers ({!Handler}) turn a request into a
    {!Response}; a {!Router} maps methods and path patterns to them; static
    files come from {!Config.root} ({!Static}); {!Server} listens, with one
    event loop per domain.

    {b Cross-cutting services are effects.} Logging, the clock, file access and
    the handler store are the effects of {!Services}, answered by a handler
    installed around each connection. {!Production} implements them for real,
    {!In_memory} for tests (no sockets, disks or real time), and one can be
    swapped alone. The connection {!Pipeline} is written once against
    {!Capabilities.S}; {!Connection} runs it with effects, or with direct calls
    for comparison.

    {[
      let hello (_ : Braid_server.Handler.request) =
        Braid_server.Response.string "hello\n"

      let () =
        let open Braid_server in
        let router = Router.empty |> Router.add GET "/" hello in
        match
          Server.create ~settings:(Production.settings router) Config.default
        with
        | Ok server -> Server.run server
        | Error msg -> prerr_endline msg
    ]} *)

(** {1 Protocol values} *)

module Status = Status
module Http_date = Http_date
module Date_cache = Date_cache
module Url_path = Url_path
module Range = Range

(** {1 Applications} *)

module Response = Response
module Body = Body
module Handler = Handler
module Router = Router
module Static = Static

(** {1 Services as effects} *)

module Log = Log
module Log_writer = Log_writer
module File = File
module Capabilities = Capabilities
module Services = Services
module Production = Production
module In_memory = In_memory

(** {1 Serving} *)

module Config = Config
module Output = Output
module Pipeline = Pipeline
module Connection = Connection
module Server = Server
