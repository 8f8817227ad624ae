(** Where idle workers sleep, without lost wake-ups.

    Publishers push work first and call {!notify} after; a worker calls {!park}
    with a [poll] that looks for work. Since OCaml atomics are sequentially
    consistent, either [poll] (which runs after the worker announced itself)
    sees the work, or {!notify} sees the announced sleeper and wakes it. *)

type t

val create : unit -> t

val notify : t -> unit
(** [notify t] wakes one parked worker, if any is parked, none is already being
    woken and none is searching. Cheap when no worker sleeps (one atomic read):
    call it after every publication of work. Never blocks for long (takes [t]'s
    lock only when a worker sleeps). Callable from any domain or systhread. *)

val try_search : t -> bool
(** [try_search t] is [true] if the caller became the one worker searching for
    work (spinning before it parks); then it must call {!stop_searching} after.
    While a worker searches, {!notify} wakes nobody: the searcher will find the
    work. At most one searcher keeps an oversubscribed machine from losing cores
    to spinning. *)

val stop_searching : t -> unit
(** [stop_searching t] ends the caller's search. If it found no work, it must
    {!park} next, whose first poll looks again: work published while it searched
    is never missed. If it found work while more may be waiting (the pool checks
    its shared queue), it should {!notify}, so that a sleeper takes over: what
    was published during the search woke nobody. *)

val notify_all : t -> unit
(** [notify_all t] makes every parked worker poll again (for shutdown). *)

val park : t -> (unit -> 'a option) -> 'a option
(** [park t poll] calls [poll ()] and returns its [Some v] at once; if [poll]
    found nothing, it sleeps on a condition variable until woken, then returns
    [None]: the caller should look for work again (spinning first, since
    whatever woke it is usually followed by more) before parking again. [poll]
    runs under [t]'s lock: it must not block, nor call {!notify}. Blocks the
    calling systhread (not just a fiber): for pool workers only. *)
