(** Forked child processes for benchmarks. *)

val run : ?lwt:bool -> (unit -> string) -> int * in_channel
(** [run f] forks; the child computes [f ()], writes it to a pipe and exits
    (without running [at_exit]); the parent gets the child's pid and the pipe's
    reading end. [~lwt:true] forks with [Lwt_unix.fork], which the child needs
    to use Lwt. Call with no other domain running. *)

val result : int * in_channel -> string
(** [result (pid, ic)] reads what the child wrote and reaps it.
    @raise Failure if the child wrote nothing (it failed). *)

val kill : int * in_channel -> unit
(** [kill (pid, ic)] kills a child that serves forever and reaps it. *)

val reap : int -> unit
(** [reap pid] waits for child [pid] to exit. *)

val children_cpu_s : unit -> float
(** User and system CPU seconds of all reaped children so far. *)
