(** A growable ring buffer of tasks, used by one thread only (the loop's).
    Popped slots are cleared so finished continuations are not kept alive. *)

type t

val create : unit -> t
val is_empty : t -> bool
val length : t -> int
val push : t -> (unit -> unit) -> unit

val pop : t -> unit -> unit
(** [pop q] removes and returns the oldest task.
    @raise Invalid_argument if [q] is empty. *)
