(** Waiting with withdrawal: the pattern every structure uses to block. *)

type 'a resumer = ('a, exn) result -> bool

exception Cancelled
(** {!Braid.Cancelled}. *)

val suspend : ('a resumer -> 'a option) -> 'a
(** {!Braid.suspend}. *)

val suspend_withdrawing :
  register:('a resumer -> 'a option) -> withdraw:('a resumer -> exn -> 'a) -> 'a
(** [suspend_withdrawing ~register ~withdraw] suspends with [register] as the
    block function. If the wait ends with an exception [e] (cancellation, or an
    error resumption) after [register] published resumer [r] (returned [None]),
    the result is [withdraw r e]: it takes [r] out of the structure if it is
    still there and raises, or returns if the operation had completed. If
    [register] itself raised, or returned a value, [withdraw] is not called. *)

val self_id : unit -> int
(** {!Braid.Fiber.self_id}. *)

val protect : (unit -> 'a) -> 'a
(** {!Braid.Fiber.protect}. *)
