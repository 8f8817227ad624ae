(** The state of one connection's pipeline ({!Pipeline.t}), which the modules of
    the pipeline ([Dispatch], [Framing], [Settlement]) share: its configuration,
    its input and output buffers, its progress, and the services answering it.
    Owned by the connection's fiber. Internal. *)

open Braid_web
open Braid_web.Private

type t = {
  config : Config.t;
  head_limits : Braid_http.Limits.t;
      (** The parser's limits: [config.limits] with [max_body] raised to the
          largest route limit ({!Services.t.largest_max_body}) if one is higher,
          so that a declared length a route accepts reaches it. Dispatch then
          applies the route's own limit (or the server's). *)
  dates : Head_cache.t;
  peer : Unix.sockaddr option;
  secure : bool;  (** The connection is over TLS. *)
  input : Braid_http.Input.t;
  out : Output.t;
  progress : Progress.t;
  services : Services.t;
      (** The services in force around the connection, looked up once when it
          starts: the handlers above a connection's stack cannot change while it
          runs, so every request would get the same record. (Or the production
          record itself, in the benchmarks' direct-calls baseline.) *)
  await_input : (unit -> unit) option;
      (** Waits until the connection has bytes to read, without reading: the
          pipeline then waits for the next request holding no buffer. *)
  alpn : unit -> string option;
      (** The protocol chosen by TLS's ALPN ({!Pipeline.transport}). *)
  file_sender : (unit -> Output.file_sender) option;
      (** On a socket: files are sent with sendfile(2), by a sender made when
          first needed (most responses need none, and a connection's pipeline is
          set up again each time it leaves parking). [None] (an in-memory
          connection): they are read and written. *)
  mutable body : Body.t;
      (** The body of the request in progress ({!Body.empty} between requests).
          Closed when the exchange ends, however it ends: a fiber the handler
          forked and left running must not read from this connection's input
          afterwards, nor from the next connection that reuses its buffers. *)
  mutable ending : Handler.Ending.t;
      (** The request in progress's ({!Handler.at_end}), made by [Dispatch], run
          when the exchange ends however it ends, after [body] is closed.
          {!Handler.Ending.finished} between requests. *)
  mutable head_written : bool;
  mutable abandon_body : bool;
      (** The handler was cancelled: its body is not worth draining. *)
  mutable closed_as_asked : bool;
      (** The pipeline ended after a request that asked for the close
          ([Connection: close], or HTTP/1.0 without keep-alive), its body read
          to its end and nothing read past it ({!Pipeline.closed_as_asked}). *)
  upgraded_read : bytes -> int -> int -> int;
      (** The connection's read with no timeout and no flush, for an upgraded
          connection ({!Upgraded}). *)
  upgraded_write : bytes -> int -> int -> unit;
      (** The connection's write, counted for the send timeout, its exceptions
          unwrapped, for an upgraded connection. *)
}

val log_error : t -> string -> unit
(** [log_error c text] logs an [Error] message through [c.services]. *)
