(** Marlow's timeout manager: one fiber per loop enforces the idle and send
    deadlines of every connection in the loop's {!Registry}, so that a
    connection costs no timer and no fiber of its own. It also parks connections
    idle for a tick (they wait outside their handlers, or with no fiber) and
    gives memory back after a burst. Runs in a fiber of the loop that owns the
    registry. Internal. *)

val sweep : Registry.context -> unit
(** See {!Connection.sweep}. Never returns; blocks its fiber between looks.
    @raise Braid.Cancelled when its fiber is cancelled. *)
