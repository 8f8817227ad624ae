(** A growable ring buffer of tasks, for one thread only: a scheduler's run
    queue.

    Cheaper than [Stdlib.Queue] on the scheduler's hot path: one write barrier
    per push, and popped slots are cleared so finished tasks are not kept alive.
*)

type t

val create : unit -> t
val is_empty : t -> bool
val length : t -> int
val push : t -> (unit -> unit) -> unit

val pop : t -> unit -> unit
(** [pop q] removes and returns the oldest task.

    Raises [Invalid_argument] if [q] is empty. *)
