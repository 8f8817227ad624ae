(** Immutable FIFO queues (two lists), the waiter queues inside structures'
    atomic states. *)

type 'a t

val empty : 'a t
val is_empty : 'a t -> bool
val length : 'a t -> int
val push : 'a t -> 'a -> 'a t

val pop : 'a t -> ('a * 'a t) option
(** The oldest element and the rest. *)

val remove : ('a -> bool) -> 'a t -> 'a t option
(** [remove p q] is [q] without its first element satisfying [p], or [None] if
    none does. *)

val to_list : 'a t -> 'a list
(** Oldest first. *)
