(** Server processes for the benchmarks: spawning (pinned to a core with
    [taskset]), waiting until they accept, stopping. Blocking, for the
    benchmark's main domain. *)

type t

val free_port : unit -> int
(** A port of 127.0.0.1 that was free a moment ago. *)

val spawn :
  ?cpu:int ->
  ?env:(string * string) list ->
  name:string ->
  string list ->
  port:int ->
  t
(** [spawn ~cpu ~name argv ~port] starts [argv] (pinned to [cpu] with [taskset]
    if given, its output in a temporary log file), then waits until
    127.0.0.1:[port] accepts a connection.
    @raise Failure if the process exits first or 20 s pass. *)

val stop : t -> unit
(** Sends SIGTERM, waits for the process, removes its log. *)

val cpu_seconds : t -> float
(** User plus system CPU time so far of the process and its direct children
    (nginx's workers), from [/proc]; [nan] where [/proc] lacks it. *)

val self_role_argv : unit -> string list
(** The command that re-executes this benchmark binary: with [BRAID_BENCH_ROLE]
    in its environment it becomes a server (see {!Roles}). *)

val pin_self : string -> unit
(** [pin_self cpus] sets the CPU affinity of every thread of this process
    ([taskset -a -p -c cpus]). *)

val cpu_list_all : unit -> string
(** ["0-N"] for every CPU of the machine. *)

val load_average : unit -> float
(** The 1-minute load average. *)

val get : port:int -> string -> int * string
(** [get ~port path] is the status and body of [GET path] on a fresh connection
    (HTTP/1.0, read to the end): a sanity check. *)
