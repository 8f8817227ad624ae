(** What the modules of one connection's pipeline share: its configuration, its
    input and output buffers, its control, and the services answering it. Owned
    by the connection's fiber. Internal. *)

type t = {
  config : Config.t;
  dates : Date_cache.t;
  peer : Unix.sockaddr option;
  input : Braid_http.Input.t;
  out : Output.t;
  control : Control.t;
  services : Services.t;
      (** The services in force around the connection, looked up once when it
          starts: the handlers above a connection's stack cannot change while it
          runs, so every request would get the same record. (Or the production
          record itself, in the benchmarks' direct-calls baseline.) *)
  await_input : (Control.t -> unit) option;
      (** Waits until the connection has bytes to read, without reading: the
          pipeline then waits for the next request holding no buffer. *)
  mutable body : Body.t;
      (** The body of the request in progress ({!Body.empty} between requests).
          Closed when the exchange ends, however it ends: a fiber the handler
          forked and left running must not read from this connection's input
          afterwards, nor from the next connection that reuses its buffers. *)
  mutable head_written : bool;
  mutable abandon_body : bool;
      (** The handler was cancelled: its body is not worth draining. *)
}

val log_error : t -> string -> unit
(** [log_error c text] logs an [Error] message through [c.services]. *)
