(** Braid's HTTP/1.1 engine: it serves the handlers of [braid_web].

    {!Server} listens, with one event loop per domain, admits and sweeps
    connections and runs each through the HTTP/1.1 pipeline; {!Config} is what
    it is told; {!Real_services} implements the services ({!Braid_web.Services})
    for real; {!Log_writer} writes the access and error logs; {!Metrics} renders
    its figures; {!Testing.call} runs a request through the whole pipeline in
    memory.

    {[
      let hello (_ : Braid_web.Handler.request) =
        Braid_web.Response.string "hello\n"

      let main () =
        let open Braid_server in
        let router = Braid_web.Router.(empty |> add GET "/" hello) in
        match
          Server.create ~settings:(Real_services.settings router) Config.default
        with
        | Ok server -> Server.run server
        | Error msg -> prerr_endline msg
    ]} *)

module Server_private := Server.Private
module Config = Config

module Server : sig
  include module type of struct
      include Server
    end
    with module Private := Server.Private
end

(** {1 Services for real} *)

module Real_services = Real_services
module Log_writer = Log_writer
module Metrics = Metrics
module Spool_limit = Spool_limit

(** {1 Tests} *)

module Testing = Testing

(** {1 For Braid's tests and benchmarks}

    The pipeline's internals, exposed for testing them without sockets and for
    the effects-versus-direct-calls experiment. Not for applications: no
    stability is promised. *)

module Private : sig
  module Server = Server_private
  module Pipeline = Pipeline
  module Connection = Connection
  module Output = Output
end
