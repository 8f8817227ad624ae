(** Shared effect handling for Braid schedulers.

    A scheduler supplies two operations and gets fibers that handle
    {!Suspend.Suspend}, {!Fiber.Fork} and {!Fiber.Current}, with cancellation
    that wakes blocked fibers at once. *)

type ops = {
  enqueue : (unit -> unit) -> unit;
      (** [enqueue task] makes [task] run later on this scheduler. Called from
          any domain or systhread (by resumers), so it must be thread-safe and
          must wake the scheduler if it is parked. *)
  spawn : Fiber.t -> (unit -> unit) -> unit;
      (** [spawn fiber body] starts a new fiber; called from inside one of the
          scheduler's own fibers (on [Fiber.fork]). It should eventually call
          {!run_fiber} [ops fiber body]. *)
}

val run_fiber : ops -> Fiber.t -> (unit -> unit) -> unit
(** [run_fiber ops fiber body] runs [body] as [fiber] until it finishes or
    suspends; resumptions are passed to [ops.enqueue]. [body] must not raise
    (wrap it, as {!Fiber.prepare} does). *)
