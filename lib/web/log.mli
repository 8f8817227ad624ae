(** What the server logs, and how any code under a server logs.

    The events are structured values ({!event}); {!emit} hands one to the
    logging service in force ({!Services.val-log}), whose implementation decides
    what to keep and how to write it: [Braid_server.Real_services] filters by
    level and writes through a [Braid_server.Log_writer], {!In_memory} keeps
    every event for a test. Callable from the request handler's fiber, from
    fibers it forks and from pool tasks it submits: their events reach the same
    log.
    {[
      let handler (_ : Handler.request) =
        Log.info "computing";
        Response.string "computed\n"
    ]} *)

include module type of struct
  include Log_event
end

val emit : event -> unit
(** [emit e] is {!Services.val-log} [e].

    Raises [Invalid_argument] outside {!Services.run}. *)

val message : level -> string -> unit
(** [message level text] emits [Message] with the services' current time. *)

val error : string -> unit
val warning : string -> unit
val info : string -> unit
val debug : string -> unit
