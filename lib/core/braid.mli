(** Braid: one [Suspend] effect shared by every scheduler and every
    synchronisation structure.

    A structure that must wait performs {!Suspend} (through {!suspend}); the
    scheduler running the caller handles it, whichever scheduler that is. So the
    structures of [braid.sync] work across the FIFO scheduler ([braid.fifo]),
    the work-stealing pool ([braid.pool]), the IO event loop ([braid.io]), Lwt
    ([braid.lwt]), bare domains and systhreads, all at once.

    {[
      let answer = Braid_sync.Promise.create () in
      Braid_fifo.run (fun () ->
          let _ =
            Braid.Fiber.fork (fun () -> Braid_sync.Promise.fill answer 42)
          in
          Braid_sync.Promise.await answer)
    ]}

    The same idea is Picos' [Trigger] and Eio's [Suspend]; Braid's contract is
    the thesis's: a resumer that reports whether its fiber was still waiting, so
    a structure never hands a value or a lock to a cancelled waiter. *)

module Fiber_plumbing := Fiber.Private

(** {1 The contract} *)

type 'a resumer = ('a, exn) result -> bool
(** [resumer r] resumes a suspended caller with [r]: [Ok v] makes its blocking
    call return [v], [Error e] makes it raise [e]. It may be called from any
    domain or systhread. Only the first call counts: it returns [true] if it
    resumed the caller, [false] if the caller had already been resumed, in
    particular because it was cancelled. A structure handing over a value or a
    lock and getting [false] must hand it to someone else. *)

type _ Effect.t +=
  | Suspend : ('a resumer -> 'a option) -> 'a Effect.t
        (** The one effect Braid schedulers handle for synchronisation: perform
            it with {!suspend}. *)

val suspend : ('a resumer -> 'a option) -> 'a
(** [suspend block] suspends the caller until it is resumed.

    The scheduler running the caller makes a {!resumer} for it and calls
    [block resumer] at once, in the handler's context (keep it short, never
    block in it). [block] returns [Some v] to complete without waiting, in which
    case it must not have handed the resumer to anyone; or [None] after
    publishing the resumer where a later event will find it. If [block] raises,
    [suspend] raises the same exception.

    Under a Braid scheduler only the calling fiber waits, and a cancelled fiber
    is woken with {!Cancelled}. With no handler (a bare domain or systhread),
    the caller spins briefly, then sleeps on a mutex/condition owned by its
    thread; it cannot be cancelled. *)

exception Cancelled
(** Raised at the blocking call of a cancelled fiber. *)

(** {1 Fibers and structured concurrency} *)

module Fiber : sig
  include module type of struct
      include Fiber
    end
    with module Private := Fiber.Private

  val fork : ?sw:Switch.t -> (unit -> 'a) -> 'a handle
  (** [fork ?sw f] is {!Switch.fork} [sw f] with a switch, else a detached
      {!Fiber.fork}. *)

  (** {2 Combinators}

      Each runs its functions in new fibers of the caller's scheduler, on a
      switch of its own, and returns once all of them have finished: no fiber
      outlives the call. A failure cancels the others and is raised ({!Multiple}
      if several failed). Cancelling the caller cancels them all; the call then
      raises {!Cancelled}. *)

  val both : (unit -> 'a) -> (unit -> 'b) -> 'a * 'b
  (** [both f g] runs [f] (in a new fiber) and [g] (in the caller) at once and
      returns both results. *)

  val all : (unit -> unit) list -> unit
  (** [all fs] runs every function of [fs] at once, each in a new fiber. *)

  val any : (unit -> 'a) list -> 'a
  (** [any fs] runs every function of [fs] at once, each in a new fiber, and
      returns the result of the first to return; the others are cancelled (at
      their blocking calls) and waited for. A loser that also returned before it
      saw the cancellation has its result dropped: give [any] operations whose
      result may be lost (a timer, a read into a fresh buffer), not a take from
      a channel, or let the loser put back what it took.

      Raises [Invalid_argument] if [fs] is empty. *)

  val first : (unit -> 'a) -> (unit -> 'a) -> 'a
  (** [first f g] is [any [f; g]]. *)
end

module Switch = Switch

(** {1 Writing a scheduler}

    What Braid's own schedulers ([braid.fifo], [braid.pool], [braid.io],
    [braid.lwt]) are written with. Not for applications: these functions break
    the invariants the rest of the API keeps if misused (Eio keeps the same
    things in [Eio.Private]). *)

module Private : sig
  (** Creating, starting and inspecting fibers; the [Fork] and [Current]
      effects. *)
  module Fiber : module type of struct
    include Fiber_plumbing
  end

  module Scheduler = Scheduler
  module Task_queue = Task_queue

  module Wake_up = Wake_up
  (** Waking a scheduler's idle thread from other threads (the FIFO scheduler's
      and the IO loop's). *)

  module Spin = Spin
  (** Spinning before parking (the FIFO scheduler's and {!suspend}'s). *)
end
