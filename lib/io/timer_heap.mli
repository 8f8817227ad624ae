(** Timers of one event loop: a binary min-heap by deadline in which each timer
    knows its position, so a cancelled sleep removes its timer at once (O(log
    n)) instead of leaving a dead entry behind. The array shrinks as timers go,
    so memory follows the number of live timers. One thread only. *)

type t

type timer
(** A scheduled action. *)

val create : unit -> t

val add : t -> deadline:int -> unit Braid.resumer -> timer
(** [add t ~deadline action] schedules [action (Ok ())] at [deadline] (monotonic
    nanoseconds); what it returns is ignored. Timers with equal deadlines fire
    in the order they were added (scheduled). *)

val timer : deadline:int -> timer
(** [timer ~deadline] is a timer not scheduled yet: {!schedule} it later, and
    {!remove} it whether or not that happened. A fiber about to sleep makes it
    before suspending, so that it needs nothing else to find it again. *)

val schedule : t -> timer -> unit Braid.resumer -> unit
(** [schedule t timer action] is {!add} for a timer made by {!val-timer}: the
    fiber's resumer itself is the action, with no closure around it.

    Raises [Invalid_argument] if [timer] is scheduled. *)

val remove : t -> timer -> unit
(** [remove t timer] unschedules [timer]; does nothing if it already fired or
    was removed. *)

val length : t -> int
(** Number of scheduled timers. *)

val next_deadline : t -> int
(** The earliest deadline, or [max_int] if there is no timer. *)

val fire_due : t -> now:int -> unit
(** [fire_due t ~now] removes every timer whose deadline is [<= now] and runs
    its action with [Ok ()], earliest first. Actions must not raise. *)
