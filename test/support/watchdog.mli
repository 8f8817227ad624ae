(** Turns a deadlock into a test failure instead of a hung CI job. *)

val start : ?seconds:float -> string -> unit
(** [start name] aborts the process with exit code 2 and a message naming [name]
    if it is still running after [seconds] (default 300). *)
