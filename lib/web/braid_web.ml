module Response = Response
module Body = Body
module Handler = Handler
module Router = Router
module Query = Query
module Form = Form
module Cookie = Cookie
module Json = Json
module Multipart = Multipart
module Static = Static
module Upgraded = Upgraded
module Websocket = Websocket
module Hub = Hub
module Services = Services
module Log_event = Log_event
module Log = Log
module File = File
module Spool_budget = Spool_budget
module In_memory = In_memory
module Token = Token
module Signed = Signed
module Html = Html

module Private = struct
  module Head_cache = Head_cache
end
