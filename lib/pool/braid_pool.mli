(** A work-stealing pool of domains for CPU-bound work, that any fiber, domain
    or systhread can await without blocking its neighbours.

    {[
      let work () = List.fold_left ( + ) 0 (List.init 1000 Fun.id) in
      let pool = Braid_pool.create ~domains:2 () in
      Braid_fifo.run (fun () ->
          (* This fiber waits; the other fibers of the FIFO scheduler run. *)
          let sum = Braid_sync.Promise.await (Braid_pool.async pool work) in
          assert (sum = 499_500));
      Braid_pool.shutdown pool
    ]}

    {2 How it runs}

    The pool owns [domains] worker domains; the caller of {!create} is not one
    of them. Each task runs as a Braid fiber, so inside a task every Braid
    structure blocks only that task: a task that awaits a promise, takes an
    MVar, joins a fiber, etc. is parked and its worker runs other tasks; when it
    is resumed it may continue on any worker. {!Braid.Fiber.fork} inside a task
    starts a fiber on the pool, and {!Braid.Switch} works too.

    Each worker has a work-stealing deque (Saturn's): tasks created on a worker
    (by {!async}, [Fiber.fork], or by waking a parked task) go on its own deque,
    newest first; idle workers steal the oldest tasks of the others. Work from
    outside the workers goes through a shared queue. Nested parallel code
    (recursive [async]/[await], {!parallel_for}) therefore runs depth-first on
    each worker and balances by stealing, like Cilk or Domainslib. An idle
    worker keeps looking for work for about 70 microseconds, backing off between
    looks (one worker at a time, so as not to take cores from busy domains),
    then sleeps on a condition variable: an idle pool uses no CPU. A pool that
    is never shut down keeps its domains asleep until the program exits; note
    that OCaml stops every domain, asleep or not, at each minor collection, so
    idle pools are not entirely free.

    A task that blocks its domain (a [Unix] call, [Stdlib.Mutex.lock], a busy
    wait) blocks its worker and the tasks queued behind it: use the pool for
    computation and Braid structures for waiting.

    Domainslib's [Task] is the closest peer: the difference is that its [run]
    and [await] block the whole calling domain unless called from a task, while
    here any fiber of any Braid scheduler can wait for a task. *)

type t
(** A pool of worker domains. *)

val create : domains:int -> unit -> t
(** [create ~domains ()] starts a pool of [domains] worker domains. Keep
    [domains] at most the number of cores the pool should use
    ([Domain.recommended_domain_count ()] minus the domains you already run).

    Raises [Invalid_argument] if [domains < 1]. Raises [Failure] if the runtime
    cannot spawn that many domains. *)

val size : t -> int
(** [size t] is the number of worker domains. *)

val async : t -> (unit -> 'a) -> 'a Braid_sync.Promise.t
(** [async t f] submits [f ()] to run on the pool and returns at once with a
    promise of its result. Awaiting the promise ({!Braid_sync.Promise.await})
    blocks only the awaiting fiber (or, outside a scheduler, the awaiting
    systhread), and works from anywhere, including from a task of [t]. If [f]
    raises [e], the promise is filled with [e]: awaiters raise [e] with the
    backtrace of where [f] raised it. A failure nobody awaits (or
    {!Braid_sync.Promise.peek}s) is never lost: {!shutdown} raises it.

    {b Cancellation follows the submitter, not the awaiter.} The task belongs to
    the fiber that submitted it: when that fiber's current scopes are cancelled
    (a timeout around it, its switch, the fiber itself), the task is cancelled
    too, and so are the tasks it submitted, and theirs. A task sees it where any
    fiber does, at its blocking calls (awaiting a subtask, yielding, taking a
    lock; {!Braid.Fiber.check} in a long computation), which raise
    {!Braid.Cancelled}; a task cancelled before it started never runs; the
    promise is then filled with [Cancelled]. Computation between blocking calls
    is never interrupted, and a task blocked when the cancellation comes sees it
    at its next blocking call. Work that must outlive its submitter is submitted
    inside {!Braid.Fiber.protect}; work submitted from outside any fiber belongs
    to no one. Awaiting does not tie: cancelling a fiber that only waits for the
    promise raises {!Braid.Cancelled} in that fiber alone.

    Callable from any domain or systhread.

    Raises [Invalid_argument] once {!shutdown} has begun, unless called from a
    task of [t] (running tasks may still submit subtasks while the pool drains).
*)

val run : t -> (unit -> 'a) -> 'a
(** [run t f] runs [f ()] on the pool and returns its result or raises its
    exception. It blocks only the caller: a fiber of any Braid scheduler waits
    while its siblings keep running; a bare domain or systhread sleeps. Called
    from a task of [t], it simply calls [f ()].

    Raises [Invalid_argument] as {!async} does.
    @raise Braid.Cancelled
      if the calling fiber is cancelled while waiting: the task is cancelled
      with it, at its blocking calls (see {!async}). *)

val parallel_for :
  t -> ?chunk_size:int -> start:int -> finish:int -> (int -> unit) -> unit
(** [parallel_for t ~start ~finish body] runs [body i] for every [i] from
    [start] to [finish] inclusive, like [for i = start to finish], in parallel
    on [t], and returns once all are done. It blocks only the caller, as {!run}
    does, and may be nested in tasks.

    The range is halved recursively into subtasks until a part has at most
    [chunk_size] indices, run in order by one task. The default gives about 8
    parts per worker, a whole range with one worker; pass a larger [chunk_size]
    when [body] is very cheap, a smaller one when its cost varies a lot.

    If some [body i] raise, [parallel_for] raises one of their exceptions, but
    only once every subtask has finished: no [body] runs after it returns.

    Raises [Invalid_argument] if [chunk_size < 1], or as {!async} does. *)

val parallel_for_reduce :
  t ->
  ?chunk_size:int ->
  start:int ->
  finish:int ->
  combine:('a -> 'a -> 'a) ->
  init:'a ->
  (int -> 'a) ->
  'a
(** [parallel_for_reduce t ~start ~finish ~combine ~init body] is
    [combine (... (combine (combine init (body start)) (body (start + 1))) ...)
     (body finish)] ([init] if [finish < start]), computed in parallel as
    {!parallel_for} does. Each part folds from [init] and the parts are combined
    in index order, so the result equals the sequential fold when [combine] is
    associative and [init] is its neutral element; [combine] need not be
    commutative. Blocking, nesting and exceptions are as for {!parallel_for}. *)

val shutdown : t -> unit
(** [shutdown t] stops [t] and waits until its worker domains have exited and
    been joined.

    Pending work is finished, not dropped: every task submitted before
    [shutdown] began, everything those tasks submit or fork meanwhile, and every
    task parked on a structure, runs to completion; then the workers exit. So
    [shutdown] waits for ever if a task waits for ever. {!async} from outside
    the pool raises [Invalid_argument] from the moment [shutdown] begins.

    It blocks only the calling fiber while the pool drains (outside a scheduler,
    the calling systhread), then joins the exited domains, which blocks the
    calling domain for the instant they take to terminate. Calling it again,
    from anywhere, waits for the same shutdown.

    Raises [Invalid_argument] if called from a task of [t] (it would wait for
    itself). Raises [e] if a task raised [e] and nobody awaited its promise, or
    a fiber forked with {!Braid.Fiber.fork} inside a task raised [e] and was
    never joined ({!Braid.Fiber.Multiple} if several did), after the pool has
    stopped. Reported once.
    @raise Braid.Cancelled
      if the calling fiber is cancelled while the pool drains; the pool keeps
      stopping, and a later [shutdown] joins it. *)

val with_pool : domains:int -> (t -> 'a) -> 'a
(** [with_pool ~domains f] is [f t] for a new pool [t], which is {!shutdown}
    when [f] returns or raises. If [f] raised, that exception is re-raised (and
    a failure reported by [shutdown] is dropped). *)
