(** Giving memory back to the system after a burst. Internal. *)

val give_back : unit -> unit
(** [give_back ()] compacts the OCaml heap ({!Gc.compact}: every domain pauses
    meanwhile) and returns the pages malloc then holds free to the system
    (glibc's [malloc_trim]; nothing more elsewhere). Tens of milliseconds for a
    heap of a hundred megabytes: for a lull, not for every tick. *)
