(** Many HTTP/2 connections left idle, over h2c: each sends the preface, its
    SETTINGS and one request, reads the response to its end (acknowledging the
    server's SETTINGS), and stays open with no stream. Blocking, on the calling
    thread, in batches of 200 (connect, send, read) as the [scale] benchmark's
    HTTP/1.1 idle clients; this process's descriptor limit must allow [count]
    more. *)

type t = Bench_scale.Idle_clients.t

val open_idle : port:int -> path:string -> count:int -> t
(** [open_idle ~port ~path ~count] opens [count] h2c connections to
    127.0.0.1:[port], each with one [GET path] answered in full.
    @raise Failure
      at the first connection that fails (refused, reset, closed, a GOAWAY or
      RST_STREAM, a status other than 200, no answer within 10 s), after closing
      those already opened. *)

val closed_by_server : t -> int
(** How many of the connections the server has closed (or reset) since. *)

val close : t -> unit
