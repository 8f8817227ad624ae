(** Timers of one event loop: a binary min-heap by deadline in which each timer
    knows its position, so a cancelled sleep removes its timer at once (O(log
    n)) instead of leaving a dead entry behind. The array shrinks as timers go,
    so memory follows the number of live timers. One thread only. *)

type t

type timer
(** A scheduled action. *)

val create : unit -> t

val none : timer
(** A timer that is never scheduled: removing it does nothing. *)

val add : t -> deadline:int -> (unit -> unit) -> timer
(** [add t ~deadline action] schedules [action] at [deadline] (monotonic
    nanoseconds). Timers with equal deadlines fire in the order they were added.
*)

val remove : t -> timer -> unit
(** [remove t timer] unschedules [timer]; does nothing if it already fired or
    was removed. *)

val length : t -> int
(** Number of scheduled timers. *)

val next_deadline : t -> int
(** The earliest deadline, or [max_int] if there is no timer. *)

val fire_due : t -> now:int -> unit
(** [fire_due t ~now] removes every timer whose deadline is [<= now] and runs
    its action, earliest first. Actions must not raise. *)
