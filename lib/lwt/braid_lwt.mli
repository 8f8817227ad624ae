(** Lwt and Braid sharing the same structures.

    Lwt code can wait on every Braid structure without blocking Lwt's thread,
    and Braid fibers, pool tasks, domains and systhreads can wait for Lwt
    promises. So a program can move from Lwt to Braid piece by piece: Lwt on one
    domain, Braid fibers and the pool on others, talking through the same
    channels, MVars and promises.
    {[
      let main work =
        let pool = Braid_pool.create ~domains:1 () in
        Lwt_main.run
          (let bridge = Braid_lwt.create () in
           (* Lwt waits for a pool task without blocking its loop. *)
           let open Lwt.Syntax in
           let* n =
             Braid_lwt.Promise.await bridge (Braid_pool.async pool work)
           in
           Lwt_io.printf "%d\n" n);
        Braid_pool.shutdown pool
    ]}

    {2 How it works}

    The bridge makes Lwt's thread a Braid scheduler. {!run} runs direct-style
    code as a Braid fiber on Lwt's thread, inside Lwt's loop; when the code
    waits on a structure ([Braid.Suspend]), the fiber is parked and Lwt's loop
    carries on. The structure's resumer, called from whatever domain or thread
    hands over the value, delivers the resumption back into Lwt's thread: at
    once if it runs there, otherwise through a lock-free queue and an [Lwt_unix]
    notification (one per bridge; many resumptions share one wake-up). Every
    monadic operation below is {!run} around the structure's direct-style
    operation: the structures know nothing of Lwt.

    This is the thesis's chapter 4 (monadic libraries handle [Suspend] by
    resolving a promise); Picos calls it [Picos_lwt], Eio [Lwt_eio].

    {2 Rules}

    - One bridge belongs to Lwt's thread: the systhread that runs [Lwt_main.run]
      and calls {!create}. {!run} and the monadic operations must be called
      there, from Lwt code; {!await_lwt} from anywhere.
    - Cross-thread resumptions are delivered only while Lwt's loop runs: code
      that blocks Lwt's thread delays them.
    - Lwt code must not call Braid's blocking operations directly
      ([Braid_sync.Mvar.take], [Braid_pool.run], ...): outside a fiber they park
      Lwt's whole thread. Use this module; non-blocking ones ([try_take],
      [fill], [Channel.try_send], [Braid_pool.async]) are fine.

    {2:cancellation Cancellation}

    [Lwt.cancel] on a pending operation cancels its fiber, exactly as cancelling
    a Braid fiber would: a waiter still queued is withdrawn, and the structure
    hands the value, lock or permit to the next waiter. The promise is then
    rejected with [Lwt.Canceled]. If the value had already been handed over when
    the cancellation arrived (the hand-over happened on another domain and was
    on its way to Lwt's thread), the promise resolves with that value instead:
    nothing is ever lost, so unlike an [Lwt.task] a cancelled operation can
    still succeed. A cancelled {!Mvar.put} or {!Channel.send} that had already
    been accepted resolves with [()]: its value {e was} sent.

    So look at the outcome of a cancelled operation rather than dropping it.
    [Lwt.pick], which cancels the losers and ignores their results, can drop a
    value that was already received; for a timeout, cancel the operation
    yourself and then wait for its promise, or run the whole exchange in a fiber
    ({!run}) under a Braid timeout. *)

type t
(** A bridge between Lwt's thread and Braid. Cheap; keep one per program, made
    next to [Lwt_main.run]. It holds an [Lwt_unix] notification that is never
    released. *)

val create : unit -> t
(** [create ()] makes a bridge for the calling systhread, which must be the one
    that runs (or will run) [Lwt_main.run]. Never blocks. *)

(** {1 Direct-style Braid code in Lwt} *)

(** The Braid identity under which operations run.

    Each operation runs as its own Braid fiber, so by default two operations are
    two different owners: a {!Mutex} locked by one could not be unlocked by
    another. An owner is an identity that a sequence of operations shares, the
    Lwt counterpart of a fiber: lock, wait on a condition, unlock. One operation
    at a time may run as a given owner (an owner stands for one Lwt thread of
    control), so two Lwt threads never share one and mutual exclusion holds
    between them. *)
module Owner : sig
  type t

  val create : unit -> t
  (** [create ()] is a new identity, distinct from every fiber and thread. *)
end

val run : ?owner:Owner.t -> t -> (unit -> 'a) -> 'a Lwt.t
(** [run t f] runs [f ()] as a Braid fiber on Lwt's thread and returns a promise
    of its result: direct-style Braid code inside an Lwt program. Inside [f],
    every Braid structure works and blocks only this fiber (Lwt threads and
    other fibers keep running), as do [Braid.Fiber.fork] (the new fiber runs in
    the bridge too), [Braid.Switch] and {!await_lwt}. [f] starts at once (or, if
    the bridge is busy running a fiber or delivering a result further up the
    stack, right after that) and runs until it first waits; started at once and
    never waiting, its promise is resolved when [run] returns. A long
    computation that never waits holds up Lwt's loop as any Lwt callback would.

    The promise is fulfilled with [f]'s result or rejected with its exception.
    [Lwt.cancel] on it cancels the fiber: its current or next blocking call
    raises [Braid.Cancelled] (see {!section-cancellation}); if that ends [f],
    the promise is rejected with [Lwt.Canceled].

    [?owner] runs [f] as that owner instead of a fresh fiber.

    A fiber forked with [Braid.Fiber.fork] that fails is reported to
    [!Lwt.async_exception_hook], like a failed [Lwt.async], unless a fiber
    already waiting to join it observes the failure; prefer [Braid.Switch].

    Raises [Invalid_argument] if not called on the bridge's thread, or if
    [owner] is running another operation. *)

val await_lwt : t -> 'a Lwt.t -> 'a
(** [await_lwt t p] waits for the Lwt promise [p] and returns its value, or
    raises its exception ([Lwt.Canceled] if [p] was cancelled).

    Callable from anywhere except plain Lwt code: a fiber of {!run} (it then
    simply waits for [p]), a Braid fiber of any scheduler on any domain (FIFO,
    pool task, IO loop: only that fiber waits), a bare domain or a systhread (it
    parks). Lwt is not thread-safe, so from another thread the bridge looks at
    [p] on Lwt's thread: it needs Lwt's loop to be running.

    Cancelling the waiting fiber makes [await_lwt] raise [Braid.Cancelled] at
    once; [p] itself is not cancelled (other code may be waiting for it), and
    the bridge's callback stays attached to [p] until [p] resolves, when it does
    nothing.

    Raises [Invalid_argument] if called on Lwt's thread outside a Braid fiber:
    it would wait for Lwt while blocking Lwt's thread. Use [Lwt.bind] there. *)

(** {1:monadic The structures, monadic}

    Each function is {!run} around the structure's blocking operation, with the
    same contract as in [Braid_sync] (arrival order, exceptions), returning a
    promise instead of blocking. Call them from Lwt's thread. Cancellation is as
    described {{!section-cancellation} above}. *)

module Promise : sig
  val await : t -> 'a Braid_sync.Promise.t -> 'a Lwt.t
  (** [await t p] resolves with [p]'s value once it is filled, or is rejected
      with the exception [p] was filled with (for instance by a failing
      [Braid_pool.async] task). *)
end

module Mvar : sig
  val take : t -> 'a Braid_sync.Mvar.t -> 'a Lwt.t
  val put : t -> 'a Braid_sync.Mvar.t -> 'a -> unit Lwt.t
end

module Mutex : sig
  val with_lock : t -> Braid_sync.Mutex.t -> (Owner.t -> 'a Lwt.t) -> 'a Lwt.t
  (** [with_lock t m f] locks [m], runs [f owner] and unlocks [m] once the
      promise [f] returned has resolved, however it ends. [owner] holds [m]:
      pass it to {!Condition.wait}. Cancelling the promise while waiting for [m]
      withdraws the request (the lock goes to the next waiter); later it is
      propagated to [f]'s promise, and [m] stays locked until that resolves. *)

  val lock : t -> owner:Owner.t -> Braid_sync.Mutex.t -> unit Lwt.t
  (** [lock t ~owner m] makes [owner] hold [m] once it is free. Rejected with
      [Invalid_argument] if [owner] already holds it. *)

  val unlock : t -> owner:Owner.t -> Braid_sync.Mutex.t -> unit
  (** [unlock t ~owner m] releases [m], handing it to the first live waiter.
      Never blocks.

      Raises [Invalid_argument] if [owner] does not hold [m], or is running
      another operation. *)
end

module Condition : sig
  val wait :
    t ->
    owner:Owner.t ->
    Braid_sync.Condition.t ->
    Braid_sync.Mutex.t ->
    unit Lwt.t
  (** [wait t ~owner c m] releases [m], which [owner] must hold, waits for a
      signal on [c] and re-acquires [m] for [owner]. If cancelled, the promise
      is rejected with [Lwt.Canceled] once [m] is held again. *)
end

module Semaphore : sig
  val acquire : t -> Braid_sync.Semaphore.t -> unit Lwt.t
end

module Channel : sig
  val send : t -> 'a Braid_sync.Channel.t -> 'a -> unit Lwt.t
  (** Rejected with [Braid_sync.Channel.Closed] if the channel is closed. *)

  val recv : t -> 'a Braid_sync.Channel.t -> 'a Lwt.t
  (** Rejected with [Braid_sync.Channel.Closed] once the channel is closed and
      drained. *)
end

module Lazy : sig
  val force : t -> 'a Braid_sync.Lazy.t -> 'a Lwt.t
  (** If the value is unforced, its computation runs in a fiber on Lwt's thread;
      otherwise waits for the forcer (maybe on another domain). *)
end
