module Response = Response
module Body = Body
module Upgraded = Upgraded
module Websocket = Websocket
module Handler = Handler
module Router = Router
module Log_event = Log_event
module Log = Log
module File = File
module Services = Services
module Production = Production
module In_memory = In_memory
module Log_writer = Log_writer
module Config = Config
module Systemd = Systemd
module Handover = Handover
module Server = Server

module Private = struct
  module Server = Server.Private
  module Response = Response.Private
  module Pipeline = Pipeline
  module Connection = Connection
  module Date_cache = Date_cache
  module Static = Static
  module Output = Output
end
