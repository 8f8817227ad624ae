(** What the modules of one connection's pipeline share: its configuration, its
    input and output buffers, its control, and the services answering the
    request in progress. Owned by the connection's fiber. Internal. *)

type t = {
  config : Config.t;
  dates : Date_cache.t;
  peer : Unix.sockaddr option;
  input : Braid_http.Input.t;
  out : Output.t;
  control : Control.t;
  fixed_services : Services.t option;
      (** [Some s]: the pipeline calls [s] directly and never looks its services
          up (the direct-calls baseline of the [reverse-post] benchmark).
          [None]: it looks them up once per request. *)
  mutable services : Services.t;  (** For the request in progress. *)
  mutable head_written : bool;
  mutable abandon_body : bool;
      (** The handler was cancelled: its body is not worth draining. *)
}

val refresh_services : t -> unit
(** [refresh_services c] sets [c.services] to the services in force (one
    effect), unless they are fixed. *)

val log_error : t -> string -> unit
(** [log_error c text] logs an [Error] message through [c.services]. *)
