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
    127.0.0.1:[port] accepts a connection and checks that every socket listening
    on [port] belongs to the new process or its descendants, so a server left
    over from an aborted run cannot be measured in its place.
    @raise Failure
      if the process exits first, 20 s pass, or another process listens on
      [port] too. *)

val stop : t -> unit
(** Sends SIGTERM, waits for the process, removes its log. *)

val processes : t -> int list
(** The process and its descendants now (nginx's workers, h2o's crash handler).
*)

val cpu_seconds : t -> float
(** User plus system CPU time so far of {!processes}, from [/proc]; [nan] where
    [/proc] lacks it. *)

val rss_bytes : t -> float
(** Resident memory now ([VmRSS]) of {!processes}, summed, in bytes; [nan] where
    [/proc] lacks it. *)

val sockets : t -> string list option
(** The inodes of the sockets {!processes} hold now, each once; [None] if
    [/proc] hides their descriptors (another user's processes). *)

val output : t -> string
(** What the process has written to its standard output and error so far. *)

val descriptor_limits : unit -> int * int
(** This process's soft and hard [RLIMIT_NOFILE] ([max_int] for unlimited).
    @raise Failure if [/proc/self/limits] cannot be read. *)

val with_descriptor_limit : int -> (unit -> 'a) -> 'a
(** [with_descriptor_limit n f] runs [f] with this process's soft descriptor
    limit raised to at least [n], then restores it: the processes [f] starts
    inherit it.
    @raise Failure if [n] exceeds the hard limit or [prlimit] fails. *)

val self_role_argv : unit -> string list
(** The command that re-executes this benchmark binary: with [BRAID_BENCH_ROLE]
    in its environment it becomes a server (see {!Roles}). *)

val pin_self : string -> unit
(** [pin_self cpus] sets the CPU affinity of every thread of this process
    ([taskset -a -p -c cpus]). *)

val cpu_list_all : unit -> string
(** Every CPU online on the machine (["0-1"]), whatever this process's affinity.
*)

val load_average : unit -> float
(** The 1-minute load average. *)

val get : port:int -> string -> int * string
(** [get ~port path] is the status and body of [GET path] on a fresh connection
    (HTTP/1.0, read to the end): a sanity check. *)

val run_quietly : string list -> string
(** [run_quietly argv] runs [argv] to its end, its standard error with its
    output, and returns that output.
    @raise Failure naming the program and giving its output if it fails. *)

val self_signed_p256 : cert:string -> key:string -> unit
(** [self_signed_p256 ~cert ~key] writes a self-signed ECDSA P-256 certificate
    for 127.0.0.1 (valid two days) and its key, with [openssl req]: what the TLS
    and HTTP/2 benchmarks serve. *)
