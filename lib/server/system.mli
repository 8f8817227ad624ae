(** What the server asks of the system beyond OCaml's [Unix]: giving memory back
    after a burst, the descriptor limit. Internal; the descriptor limit is
    exposed by {!Server.raise_descriptor_limit}. *)

val give_back_memory : unit -> unit
(** [give_back_memory ()] compacts the OCaml heap ({!Gc.compact}: every domain
    pauses meanwhile) and returns the pages malloc then holds free to the system
    (glibc's [malloc_trim]; nothing more elsewhere). Tens of milliseconds for a
    heap of a hundred megabytes: for a lull, not for every tick. *)

val descriptor_limits : unit -> int * int
(** [(soft, hard)] [RLIMIT_NOFILE]; [max_int] for no limit. Raises
    [Unix.Unix_error] if the system refuses. *)

val set_descriptor_limit : int -> unit
(** [set_descriptor_limit n] sets the soft [RLIMIT_NOFILE] to [n] (at most the
    hard limit). Raises [Unix.Unix_error] if the system refuses. *)
