(** The switch to another protocol after a [101] (RFC 9110 §15.2.2, §7.8): a
    handler's {!Braid_web.Response.upgrade} answered, the connection handed to
    its callback ({!Braid_web.Upgraded}). Part of the pipeline, in the
    connection's fiber. Internal. *)

open Braid_web
open Braid_http

val asked_for : Request.t -> string -> bool
(** [asked_for req protocol]: only an HTTP/1.1 request can ask, with [protocol]
    in its [Upgrade] field (by name, or name and version) and [upgrade] among
    its connection options. *)

val refused :
  Pipeline_state.t -> Request.t -> time:float -> string -> Response.t
(** [refused c req ~time why] is the [500] for an upgrade the request did not
    ask for (or answered before its body was read), logged as a
    {!Braid_web.Log.Handler_failed} event saying [why]. *)

val run :
  Pipeline_state.t ->
  Request.t ->
  now:float ->
  protocol:string ->
  Response.t ->
  (Upgraded.t -> unit) ->
  unit
(** [run c req ~now ~protocol response callback] sends the [101] with
    [response]'s fields, logs it, gives the connection's buffers back and runs
    [callback] with the connection (the bytes read past the request first); the
    connection closes when it returns. Its failure is logged; a failed read or
    write of the connection raises [Unwind.Io_failed]; the connection's own
    exceptions ([Unwind.is_connections_own]) pass. Blocks the fiber as the
    callback does. *)
