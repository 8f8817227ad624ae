(** Spinning before parking: the one policy of Braid's schedulers and of
    {!Braid.suspend} without a scheduler. For scheduler writers only (it is
    {!Braid.Private.Spin}).

    A thread about to sleep until another domain hands it something often gets
    it within microseconds; catching it by spinning saves a futex sleep and
    wake-up on both sides. The spin pauses between looks with the [backoff]
    library's randomised exponential backoff (so several spinners do not look in
    step), capped low so that a look comes every 16 pauses at most.

    Backoff draws its waits from the domain's default [Random] state, so
    spinning advances it: a program that needs a reproducible sequence on a
    domain that may spin should draw from a [Random.State] of its own. *)

val until : looks:int -> ('a -> bool) -> 'a -> bool
(** [until ~looks ready x] is [true] as soon as [ready x] is, looking at most
    [looks + 1] times with a backoff between looks; [false] if it never was.
    (The function and its argument apart, so that a caller passes a toplevel
    function and allocates no closure.) *)
