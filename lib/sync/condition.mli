(** Condition variables, used with {!Mutex}.

    [wait] atomically releases the mutex and waits for a signal; it holds the
    mutex again when it returns, by value or by exception. A signal is never
    consumed by a cancelled waiter. Lock-free. *)

type t

val create : unit -> t

val wait : t -> Mutex.t -> unit
(** [wait c m] releases [m], waits for [signal] or [broadcast] on [c], then
    re-acquires [m] (shielded from cancellation). Blocks only the calling fiber.
    Like all condition variables, check your predicate in a loop.

    Raises [Invalid_argument] if the caller does not hold [m].
    @raise Braid.Cancelled if cancelled while waiting, with [m] held again. *)

val signal : t -> unit
(** [signal c] wakes the longest-waiting live waiter, if any. *)

val broadcast : t -> unit
(** [broadcast c] wakes every waiter. *)
