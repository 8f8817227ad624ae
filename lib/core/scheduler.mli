(** Shared effect handling for Braid schedulers.

    A scheduler supplies two operations and gets fibers that handle
    {!Braid.Suspend}, {!Fiber.Fork} and {!Fiber.Current}, with cancellation that
    wakes blocked fibers at once. *)

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

(** {1 Fibers of a single-threaded scheduler}

    What every scheduler that runs on one thread keeps about its fibers: how
    many are live (its [run] returns when none is), and which failed without
    anyone joining them ({!Fiber.result_of_run} re-raises those). Confined to
    the scheduler's thread. *)

type tally

val tally : unit -> tally
(** A tally of no fiber. *)

val live : tally -> int
(** Fibers tracked and not yet finished. *)

val track : tally -> ops -> Fiber.t -> (unit -> unit) -> unit -> unit
(** [track tally ops fiber body] counts [fiber] live from now and returns the
    task that runs it ({!run_fiber} [ops fiber body]); when [body] finishes,
    [fiber] is counted out, and kept if its failure went unobserved. *)

val single_threaded :
  tally -> Task_queue.t -> enqueue:((unit -> unit) -> unit) -> ops
(** [single_threaded tally runnable ~enqueue] is the operations of a scheduler
    whose fibers run on one thread from the run queue [runnable]: [enqueue] as
    given, and a [spawn] that pushes onto [runnable] the task {!track} makes (so
    [tally] counts the new fiber at once). The FIFO scheduler's and the IO
    loop's. *)

val result : tally -> main:Fiber.t -> 'a Fiber.handle -> 'a
(** [result tally ~main handle] is {!Fiber.result_of_run} with the tally's
    unobserved failures. *)
