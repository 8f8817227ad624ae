(** Blocking system calls off the event loop: a pool of systhreads that runs a
    call which may block (a file read from a slow disk, [getaddrinfo], a [stat])
    and resumes the calling fiber with its result.

    {[
      let open_read_only path =
        Blocking.run ~dispose:Unix.close (fun () ->
            Unix.openfile path [ O_RDONLY; O_CLOEXEC ] 0)
    ]}

    Only the calling fiber waits: the loop runs its other fibers meanwhile, and
    the result comes back through {!Braid.suspend}, like any Braid structure's.
    So [run] works from every Braid scheduler (an IO loop, the FIFO scheduler, a
    pool task), and from a bare domain or systhread, which it blocks.

    {b Where the threads run.} A pool's threads live on a domain of their own,
    started with the pool's first call: a thread coming back from a system call
    never competes with an event loop for its domain's runtime lock, so a busy
    loop delays no result and a returning call never pauses a loop. libuv and
    Eio ([Eio_unix.run_in_systhread]) have the same kind of pool.

    {b Sizing.} Threads start as calls queue up with every thread busy, up to
    the pool's [max_threads], and then stay (idle ones wait on a condition and
    cost no CPU) until {!shutdown}. Calls beyond [max_threads] wait in a FIFO
    queue. The {!shared} pool has 16: enough for several slow disks or name
    servers at once, few enough that a burst of calls cannot exhaust the
    process's threads.

    {b Cancellation.} A fiber cancelled while its call is queued or running is
    woken at once with {!Braid.Cancelled}; a queued call then never starts. A
    call already running cannot be interrupted: it runs to its end on its
    thread, and its result is handed to [dispose] (which closes a descriptor the
    call opened, say), so nothing leaks. Give the pool only calls that finish on
    their own: a thread blocked forever is lost to the pool. *)

type t
(** A pool of threads for blocking calls. *)

val create : ?max_threads:int -> unit -> t
(** [create ~max_threads ()] is a new pool with no thread yet; its domain and
    threads start with its first call. [max_threads] defaults to 16.

    Raises [Invalid_argument] if [max_threads < 1]. *)

val shared : unit -> t
(** [shared ()] is the process's pool ([max_threads] 16), created on first use
    and never shut down; what {!run} uses unless told otherwise. Any thread. *)

val with_pool : t -> (unit -> 'a) -> 'a
(** [with_pool pool f] runs [f ()] with [pool] as the pool of the calling fiber
    and of every fiber and pool task forked below it: their {!run} (and every
    [braid.io] call that runs on a pool) uses [pool] unless passed another. *)

val current : unit -> t
(** [current ()] is the pool {!with_pool} gave the calling fiber, else
    {!shared}[ ()]. *)

val run : ?pool:t -> ?dispose:('a -> unit) -> (unit -> 'a) -> 'a
(** [run ~pool ~dispose call] runs [call ()] on a thread of [pool] (default
    {!current}[ ()]) and returns its result, or raises the exception it raised.
    Suspends only the calling fiber (blocks the calling thread outside a Braid
    scheduler). Any domain or thread may call it; [call] runs on another domain,
    so it must not touch state of the caller's loop (a [Braid_io.Fd], say)
    without synchronisation.

    If the calling fiber is cancelled, [run] raises {!Braid.Cancelled} at once;
    a [call] not yet started is dropped, and one already running hands its
    result to [dispose] (default: drop it) on the pool's thread when it ends. An
    exception [dispose] raises is discarded: the result was nobody's, and the
    pool thread has no one to report to.

    The exception [call] raises keeps the backtrace of where it was raised.

    Raises [Invalid_argument] if [pool] was shut down. Raises [Failure] if the
    pool's domain cannot be started (the runtime's domain limit). *)

(** {1 Introspection} *)

type stats = {
  threads : int;  (** Threads started (and not ended by {!shutdown}). *)
  busy : int;  (** Threads running a call. *)
  queued : int;  (** Calls waiting for a thread. *)
}

val stats : t -> stats
(** [stats pool] is a snapshot of [pool]'s threads and queue. Any thread. *)

val shutdown : t -> unit
(** [shutdown pool] refuses new calls, lets the queued and running ones finish,
    and ends the pool's threads and domain. Blocks the calling domain until the
    calls in progress finish. Idempotent. *)
