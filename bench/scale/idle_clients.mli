(** Many keep-alive connections left idle: each sends one request, reads the
    whole response and stays open. Blocking, on the calling thread (in batches
    of 200: connect, send, read), so it needs no [select] (limited to 1024
    descriptors) and no event loop of its own; this process's descriptor limit
    must allow [count] more. *)

type t

val open_idle : port:int -> path:string -> count:int -> t
(** [open_idle ~port ~path ~count] opens [count] connections to 127.0.0.1:[port]
    and, on each, sends [GET path] (HTTP/1.1, keep-alive) and reads the response
    through its [Content-Length] body.
    @raise Failure
      at the first connection that fails (refused, reset, closed, no answer
      within 10 s, a status other than 200, no [Content-Length]), after closing
      those already opened: a run with errors is a failed run. *)

val open_with :
  kind:string ->
  opening:string ->
  read_response:(Unix.file_descr -> unit) ->
  port:int ->
  count:int ->
  t
(** [open_with ~kind ~opening ~read_response ~port ~count] is {!open_idle} for
    any protocol: each connection sends [opening], then [read_response] reads
    what answers it (raising [Failure] or [Unix.Unix_error] to fail the run);
    errors name the connection as [kind]. *)

val write_all : Unix.file_descr -> string -> int -> unit
(** [write_all fd s off] writes [s] from [off] to its end (blocking). *)

val closed_by_server : t -> int
(** How many of the connections the server has closed (or reset) since: idle
    connections it dropped would make the memory they hold look smaller. *)

val close : t -> unit
(** Closes every connection. *)

val rss_per_connection :
  label:string ->
  rss:(unit -> float) ->
  open_idle:(count:int -> t) ->
  warm_up:int ->
  count:int ->
  (float, string) result
(** [rss_per_connection ~label ~rss ~open_idle ~warm_up ~count]: [warm_up]
    connections opened and closed (memory a server keeps for reuse after them
    would otherwise be counted against the idle ones), then [count] opened with
    [open_idle] and left idle; the server's [rss ()] after, less before (each
    read after 2.5 s of quiet), per connection. An error if a connection failed
    or the server (named [label]) closed any of them. Blocks for about 5 s plus
    the connections' opening. *)
