(** The exceptions that unwind a connection's pipeline, as opposed to a
    handler's failure (which becomes a [500]). Internal to the server. *)

exception Io_failed of exn * Printexc.raw_backtrace
(** The connection's own read or write failed (a reset): carried through
    handlers untouched and re-raised as it was by {!Pipeline.serve} and
    {!Pipeline.resume}. *)

exception Abort
(** The response cannot be completed (its head is out): close now. *)

exception Timed_out
(** A read waited longer than its phase allows ({!Progress.t.phase} tells
    which). *)

exception Park
(** An idle connection is asked to wait for its next request outside its
    handlers (see {!Pipeline.Parked}), so that their fiber stacks are freed
    while it waits. *)

val is_connections_own : exn -> bool
(** [is_connections_own e] is true for the exceptions above and
    {!Braid.Cancelled}: what a handler or a stream must let through, never turn
    into a [500]. *)
