(** How a response goes on the wire: its head (status line, [Date], the
    handler's fields, the framing fields the pipeline owns), and its content (a
    string, a file region, a stream with or without chunked coding). Internal.
*)

open Braid_web

type t =
  | Length of int  (** [Content-Length]. *)
  | Chunked  (** [Transfer-Encoding: chunked]. *)
  | Unframed
      (** Neither: no content, or content until the connection closes. *)

val of_response : Response.t -> chunked:bool -> t
(** How [response] is framed when its stream (if any) is [chunked]. *)

val write_head :
  ?upgrade:bool ->
  Pipeline_state.t ->
  now:float ->
  status:int ->
  headers:(string * string) list ->
  t ->
  keep_alive:bool ->
  version:Braid_http.Request.version ->
  unit
(** [write_head c ~now ~status ~headers framing ~keep_alive ~version] buffers
    the head: the handler's fields but [Date], [Connection], [Content-Length]
    and [Transfer-Encoding], which it writes itself ([Connection: close] when
    not [keep_alive], [Connection: keep-alive] to an HTTP/1.0 client that keeps
    it). With [upgrade], the [Connection] field is [Upgrade] instead (a [101]).
*)

val write_file :
  Pipeline_state.t -> File.contents -> offset:int -> length:int -> unit
(** [write_file c contents ~offset ~length] sends that region of an opened file,
    closing it after. A region that does not fit beside the head in the output
    buffer is sent with [c.file_sender] when the connection has one and the file
    a descriptor (sendfile(2), the head sent just before with [MSG_MORE] so that
    both share a packet), else read into the output buffer and written; where
    sendfile does not apply ({!Output.Cannot_send_file}), it is read and written
    from there. Blocks the fiber while the socket is full, and the domain while
    the disk reads the file.
    @raise Unwind.Abort
      if the file got shorter (fewer bytes than promised, by either way) or a
      read failed (logged): the head is out, the connection must close. *)

val write_stream :
  ?length:int ->
  Pipeline_state.t ->
  Braid_http.Request.t ->
  time:float ->
  (Response.Writer.t -> unit) ->
  chunked:bool ->
  int
(** [write_stream c request ~time f ~chunked] runs the stream [f], sending what
    it writes (as chunks if [chunked], then the last chunk), and returns the
    content bytes sent. With [length] (the [Content-Length] sent), a write
    beyond it is not sent.
    @raise Unwind.Abort
      if [f] raised (logged as [Handler_failed] at [time]), or wrote more or
      fewer bytes than [length]: the head is out. *)

val refusal : status:string -> string -> string
(** [refusal ~status text] is a whole HTTP/1.1 response, [status] (such as
    ["503 Service Unavailable"]) with [text] as its plain-text body and
    [Connection: close]: what the server writes to a connection it answers
    without reading a request (a client over its cap, plain HTTP on the TLS
    port). Made once, at start: no [Date]. *)
