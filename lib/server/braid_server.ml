module Config = Config
module Server = Server
module Real_services = Real_services
module Log_writer = Log_writer
module Metrics = Metrics
module Spool_limit = Spool_limit
module Testing = Testing

module Private = struct
  module Server = Server.Private
  module Pipeline = Pipeline
  module Connection = Connection
  module Output = Output
end
