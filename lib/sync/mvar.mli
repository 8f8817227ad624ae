(** Synchronising variables: a one-slot box that is either full or empty.

    [take] waits while it is empty, [put] waits while it is full. Waiters are
    served first come, first served. A value put is taken exactly once, even
    when waiters are cancelled: a blocked [take] that is cancelled never
    receives a value, and a cancelled [put] either completed (its value is in
    the box) or raises. Lock-free. *)

type 'a t

val create : 'a -> 'a t
(** [create v] is a full MVar holding [v]. *)

val create_empty : unit -> 'a t
(** [create_empty ()] is an empty MVar. *)

val put : 'a t -> 'a -> unit
(** [put m v] puts [v] in [m], waiting while [m] is full. Blocks only the
    calling fiber (or thread).
    @raise Braid.Cancelled
      if cancelled while waiting, in which case [v] was not put. (If the
      cancellation comes after [v] was accepted, [put] returns and the next
      blocking call raises instead.) *)

val take : 'a t -> 'a
(** [take m] removes and returns [m]'s value, waiting while [m] is empty.
    @raise Braid.Cancelled if cancelled while waiting; no value is lost. *)

val try_put : 'a t -> 'a -> bool
(** [try_put m v] puts [v] if [m] is empty; never blocks. *)

val try_take : 'a t -> 'a option
(** [try_take m] takes the value if [m] is full; never blocks. *)

val is_empty : 'a t -> bool
