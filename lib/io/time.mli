(** Monotonic time, sleeping and timeouts for fibers of an event loop.

    Timers live in the loop's heap; a cancelled sleep or a finished timeout
    removes its timer at once, so memory follows the number of pending timers.
    All functions but {!now} must be called from a fiber of {!Braid_io.run}
    ([Invalid_argument] otherwise) and block only that fiber. *)

val now : unit -> Mtime.t
(** [now ()] reads the monotonic clock (the one timers use). Never blocks;
    callable from anywhere. *)

val now_ns : unit -> int
(** [now_ns ()] reads the same clock in nanoseconds, without allocating (an
    [Mtime.t] is a boxed integer): for code that reads it on every request.
    Never blocks; callable from anywhere. *)

val sleep : float -> unit
(** [sleep seconds] suspends the calling fiber for [seconds] (at least; the loop
    wakes with millisecond granularity). [sleep 0.] (or less) yields to the
    other runnable fibers.

    Raises [Invalid_argument] if [seconds] is NaN.
    @raise Braid.Cancelled
      if the fiber is cancelled (woken at once, timer removed). *)

val sleep_until : Mtime.t -> unit
(** [sleep_until t] suspends the calling fiber until {!now} reaches [t].
    @raise Braid.Cancelled if the fiber is cancelled. *)

val timeout : float -> (unit -> 'a) -> 'a option
(** [timeout seconds f] runs [f ()] in the calling fiber and returns [Some v] if
    it returns [v] within [seconds], or [None] once [seconds] have passed: [f]
    is then cancelled, that is, its current or next blocking call raises
    {!Braid.Cancelled}, so it unwinds and releases its resources (its switches
    close their sockets) before [timeout] returns. Work that never blocks cannot
    be interrupted.

    Timeouts nest to any depth: the innermost whose deadline passes first
    returns [None], and the enclosing ones carry on. If the calling fiber is
    cancelled from outside (or an enclosing timeout expires), [timeout] raises
    {!Braid.Cancelled} instead of returning [None]. This is the combinator of
    Marlow et al.'s "Asynchronous exceptions in Haskell", built on
    {!Braid.Fiber.Scope}.

    Raises [e] if [f] raises [e]. Raises [Invalid_argument] if [seconds] is NaN.
    @raise Braid.Cancelled if the calling fiber itself is cancelled. *)
