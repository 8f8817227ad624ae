(** Waking a scheduler's idle thread from other threads without losing a
    wake-up: the one implementation [Braid_fifo] and [Braid_io]'s loop share.
    For scheduler writers only (it is {!Braid.Private.Wake_up}).

    A scheduler's thread, the {e sleeper}, runs work that {e producers} (any
    thread of any domain) publish where it looks, typically a multi-producer
    queue that only the sleeper pops. When the sleeper finds no work it sleeps,
    and a producer must then wake it. The protocol is Dekker's:

    - a producer publishes its work, then reads the sleeper's {!type-flag}, and
      wakes the sleeper if the flag is set;
    - the sleeper sets the flag, then looks for work once more, and blocks only
      if there is none.

    Both sides write then read sequentially consistent atomics ([Atomic]), so at
    least one sees the other: the producer sees the flag and wakes the sleeper,
    or the sleeper sees the work and does not block. Of the producers that see
    the flag set, only the first to clear it wakes the sleeper: a burst of
    pushes costs one wake-up.

    How the sleeper blocks, and what wakes it, is the scheduler's: a {!Sleeper}
    ({!Monitor} for [Braid_fifo], epoll and an eventfd for [Braid_io]).
    test/core/dscheck checks every interleaving of this protocol with one and
    two producers, each kind of sleeper, and a sleeper that wakes for reasons of
    its own and goes back to sleep. *)

type flag
(** Set while the sleeper is blocked or about to block. *)

val flag : unit -> flag
(** A flag that is not set. *)

module type Sleeper = sig
  type t
  (** The scheduler, as its sleeper and its producers see it. *)

  type timeout
  (** How long {!block} may block, in the scheduler's terms. *)

  type outcome
  (** What {!block} and {!poll} return to the scheduler. *)

  val flag : t -> flag
  (** The sleeper's flag: one per sleeper, for its whole life. *)

  val has_work : t -> bool
  (** Whether work is published for the sleeper. Called on the sleeper's thread
      only. It must read an atomic that publishing writes (Saturn's queues'
      [is_empty] does), so that it sees all work published before the flag was
      set. *)

  val block : t -> timeout -> outcome
  (** Blocks the sleeper's thread. Called only by {!Make.sleep}, after it set
      the flag and found no work. It must return once {!wake} has been called
      since the flag was set, even if that call came before [block] started, and
      whether or not there is work then: an eventfd keeps its count until read;
      a condition variable needs a signalled flag under its mutex ({!Monitor}
      keeps one). It may also return for reasons of its own: a timeout, a ready
      descriptor, a wake-up meant for an earlier sleep. *)

  val poll : t -> outcome
  (** What {!Make.sleep} does instead of blocking when it finds work after
      setting the flag (a look at epoll with no timeout, say). *)

  val wake : t -> unit
  (** Makes {!block} return. Called on any thread, by {!Make.notify} only, at
      most once each time the flag is set. *)
end

module Make (S : Sleeper) : sig
  val notify : S.t -> unit
  (** [notify s], on any thread, after publishing work where [S.has_work s] will
      see it: if the sleeper is blocked or about to block, and no other producer
      is already waking it, wakes it with [S.wake s]. No allocation; one
      [Atomic.get] when the sleeper is awake, the common case on a busy
      scheduler. *)

  val sleep : S.t -> S.timeout -> S.outcome
  (** [sleep s timeout], on the sleeper's thread only (one call at a time):
      [S.block s timeout] unless work is published already, then [S.poll s].

      Guarantee: no lost wake-up. If work was published before [sleep] blocks,
      or is published while it blocks by a producer that then calls [notify],
      [sleep] returns; it never stays blocked on work it was told of. It may
      also return with no work (a timeout, a wake-up meant for an earlier
      sleep): the caller looks for work again and sleeps again. *)
end

(** A mutex and a condition variable to block on, for a sleeper with nothing
    else to wait for: its {!Sleeper.block} is [wait], its {!Sleeper.wake} is
    [signal].

    A signal is kept until a [wait] takes it, as an eventfd keeps its count,
    which is what {!Sleeper.block} must do. Waiting for the work itself instead
    ([while not (has_work ()) do Condition.wait ...]) would not do: a wake-up
    meant for work the sleeper has already taken would send it back to wait with
    its flag cleared by that wake-up, and the next producer would not wake it
    (test/core/dscheck finds that interleaving). *)
module Monitor : sig
  type t

  val create : unit -> t

  val wait : t -> unit
  (** [wait m] returns once [signal m] has been called since the last [wait m]
      returned: at once if it already has. One thread waits at a time. *)

  val signal : t -> unit
  (** [signal m], from any thread, ends the [wait m] in progress, or else the
      next one. *)
end
