(** Spinning before parking: the one policy of the FIFO scheduler and of
    {!Braid.suspend} without a scheduler. For scheduler writers only (it is
    {!Braid.Private.Spin}).

    A thread about to sleep until another domain hands it something often gets
    it within microseconds; catching it by spinning saves a futex sleep and
    wake-up on both sides. The spin looks, pauses once ([Domain.cpu_relax]), and
    looks again.

    Not the [backoff] library's randomised exponential backoff: that spreads out
    threads that contend for one location (compare-and-set retries), and here
    one thread only reads a line that one producer writes, so there is nothing
    to spread out, while longer pauses between looks delay noticing the handoff.
    Measured on the parallel 1-slot handoff
    ([bench/main.exe producer-consumer]), pauses of Backoff's draws (1 to 16)
    cost 15 to 18% per message against single pauses. [Braid_io]'s loop spins
    its own way, by polling epoll, because a loop of pause instructions can get
    a virtual CPU descheduled. *)

val until : pauses:int -> ('a -> bool) -> 'a -> bool
(** [until ~pauses ready x] is [true] as soon as [ready x] is, looking at most
    [pauses + 1] times with a pause between looks; [false] if it never was. (The
    function and its argument apart, so that a caller passes a toplevel function
    and allocates no closure.) *)
