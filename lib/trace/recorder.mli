(** Reading a ring. A recorder belongs to the thread that made it: poll it from
    one thread at a time. *)

type t

val of_self : unit -> t
(** [of_self ()] reads this process's ring, which must be started
    ({!Probe.enable}). Raises [Failure] otherwise. *)

val of_process : dir:string -> pid:int -> (t, string) result
(** [of_process ~dir ~pid] reads the ring of process [pid], in [dir] (its
    [OCAML_RUNTIME_EVENTS_DIR]), and reads what it holds already. [Error] while
    the ring does not exist yet, or its header is not written yet. *)

val poll : t -> int
(** [poll t] reads what the ring holds now and returns how many events it read.
    Never blocks. Read often enough that the ring does not wrap (the lost events
    are counted as {!Event.Lost}). *)

val events : t -> Event.t list
(** Every event read so far, in time order. *)

val close : t -> unit
(** Frees the cursor; later polls read nothing. *)
