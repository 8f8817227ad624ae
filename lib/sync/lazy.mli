(** Lazy values safe to force from any fiber, domain or thread at once.

    The first forcer computes the value; concurrent forcers wait for it
    (blocking only their fiber). If the computation raises, every waiter and
    every later forcer gets the same exception. Lock-free. *)

type 'a t

exception Undefined
(** The same exception as [Stdlib.Lazy.Undefined]: raised when a computation
    forces its own lazy value. *)

val from_fun : (unit -> 'a) -> 'a t
val from_val : 'a -> 'a t

val force : 'a t -> 'a
(** [force l] is [l]'s value, computing it or waiting for its computation. If
    the computing fiber is cancelled ([Braid.Cancelled] escapes the
    computation), the value goes back to unforced and a waiting forcer takes
    over: one fiber's cancellation does not poison the value for others.

    Raises [e] if the computation raised [e].
    @raise Undefined if called from within [l]'s own computation. *)

val is_val : 'a t -> bool
(** [is_val l] is true once [l] has a value. *)
