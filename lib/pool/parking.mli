(** Where idle workers sleep, without lost wake-ups.

    Publishers push work first and call {!notify} after; a worker calls {!park}
    with a [poll] that looks for work. Since OCaml atomics are sequentially
    consistent, either [poll] (which runs after the worker announced itself)
    sees the work, or {!notify} sees the announced sleeper and wakes it. *)

type t

val create : unit -> t

val notify : t -> unit
(** [notify t] wakes one parked worker, if any is parked and none is already
    being woken. Cheap when no worker sleeps (one atomic read): call it after
    every publication of work. Never blocks for long (takes [t]'s lock only when
    a worker sleeps). Callable from any domain or systhread. *)

val notify_all : t -> unit
(** [notify_all t] makes every parked worker poll again (for shutdown). *)

val park : t -> (unit -> 'a option) -> 'a
(** [park t poll] returns the first [Some v] of [poll ()], sleeping on a
    condition variable between calls. [poll] runs under [t]'s lock: it must not
    block, nor call {!notify}. Blocks the calling systhread (not just a fiber):
    for pool workers only. *)
