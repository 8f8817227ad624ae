(** HTTP/1.1 as values and parsers, independent of any server: requests read by
    a parser written against an effect ({!Input.Refill}) or an input's own
    reader, so the same code reads a socket, a string or chunks; and the
    protocol's small pieces (status codes, dates, paths, byte ranges) a server
    or a client needs.

    {[
      Braid_http.Input.with_string
        "GET /hello HTTP/1.1\r\nHost: example.com\r\n\r\n" (fun input ->
          match
            Braid_http.Request_parser.read_request input
              Braid_http.Limits.default
          with
          | Ok request -> request.target
          | Error _ -> "")
    ]} *)

(** {1 Requests} *)

module Method = Method
module Headers = Headers
module Limits = Limits
module Parse_error = Parse_error
module Request = Request

(** {1 Reading them} *)

module Input = Input
module Request_parser = Request_parser
module Request_body = Request_body

(** {1 Responses, for clients} *)

module Response_head = Response_head
module Response_parser = Response_parser
module Response_body = Response_body

(** {1 Protocol values} *)

module Status = Status
module Http_date = Http_date
module Url_path = Url_path
module Uri_host = Uri_host
module Range = Range
module Entity_tag = Entity_tag
module Content_coding = Content_coding

(** {1 WebSocket} *)

module Websocket_codec = Websocket_codec
