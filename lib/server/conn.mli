(** What the modules of one connection's pipeline share: its configuration, its
    input and output buffers, its control, and the services answering it. Owned
    by the connection's fiber. Internal. *)

open Braid_web
open Braid_web.Private

type file_sender = {
  write_more : bytes -> int -> int -> unit;
      (** Sends everything, as the connection's write, telling the kernel that
          more follows at once ([MSG_MORE]): for the head before a file. *)
  send_file : Unix.file_descr -> off:int -> len:int -> int;
      (** [send_file fd ~off ~len] sends [len] bytes of the file [fd] from [off]
          by sendfile(2) ({!Braid_io.Net.sendfile}) and returns how many: fewer
          only if the file ended first. Raises {!Cannot_send_file}, having sent
          nothing, where the kernel cannot send from [fd]. *)
}
(** How a socket connection sends a file without copying it through the process.
    Both count as the connection's writes for the send timeout. *)

exception Cannot_send_file
(** Raised by [send_file] where sendfile(2) does not apply: the bytes must be
    read and written instead. *)

type t = {
  config : Config.t;
  head_limits : Braid_http.Limits.t;
      (** The parser's limits: [config.limits] with [max_body] raised to the
          largest route limit ({!Services.t.largest_max_body}) if one is higher,
          so that a declared length a route accepts reaches it. Dispatch then
          applies the route's own limit (or the server's). *)
  dates : Head_cache.t;
  peer : Unix.sockaddr option;
  input : Braid_http.Input.t;
  out : Output.t;
  control : Control.t;
  services : Services.t;
      (** The services in force around the connection, looked up once when it
          starts: the handlers above a connection's stack cannot change while it
          runs, so every request would get the same record. (Or the production
          record itself, in the benchmarks' direct-calls baseline.) *)
  await_input : (unit -> unit) option;
      (** Waits until the connection has bytes to read, without reading: the
          pipeline then waits for the next request holding no buffer. *)
  file_sender : (unit -> file_sender) option;
      (** On a socket: files are sent with sendfile(2), by a sender made when
          first needed (most responses need none, and a connection's pipeline is
          set up again each time it leaves parking). [None] (an in-memory
          connection): they are read and written. *)
  mutable body : Body.t;
      (** The body of the request in progress ({!Body.empty} between requests).
          Closed when the exchange ends, however it ends: a fiber the handler
          forked and left running must not read from this connection's input
          afterwards, nor from the next connection that reuses its buffers. *)
  mutable head_written : bool;
  mutable abandon_body : bool;
      (** The handler was cancelled: its body is not worth draining. *)
  upgraded_read : bytes -> int -> int -> int;
      (** The connection's read with no timeout and no flush, for an upgraded
          connection ({!Upgraded}). *)
  upgraded_write : bytes -> int -> int -> unit;
      (** The connection's write, counted for the send timeout, its exceptions
          unwrapped, for an upgraded connection. *)
}

val log_error : t -> string -> unit
(** [log_error c text] logs an [Error] message through [c.services]. *)
