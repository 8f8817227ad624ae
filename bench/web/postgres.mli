(** A temporary PostgreSQL cluster for the [web] benchmark, with the TechEmpower
    Framework Benchmarks' schema.

    [initdb] in a fresh directory under the temporary directory, the server on
    127.0.0.1 on a free port (and its Unix socket in that directory only), trust
    authentication, database [hello_world]: [world(id, randomnumber)] with
    10,000 rows of random numbers 1..10,000 and [fortune(id, message)] with
    TFB's 12 fortunes. Run as the [postgres] user ([runuser]) when this process
    is root: the server refuses to run as root. *)

type t

val start : cpu:int -> unit -> t
(** [start ~cpu ()] creates, starts (pinned to [cpu] with [taskset], it and
    every backend) and fills the cluster. Settings beside the defaults:
    [synchronous_commit = off] (as TFB), [max_connections = 100], [fsync] left
    on, [jit = off], [huge_pages = off].
    @raise Failure
      naming the step and quoting its output if a step fails; the cluster is
      then stopped and removed. *)

val stop : t -> unit
(** Stops the server ([pg_ctl stop -m fast], then [-m immediate] if that fails)
    and removes the directory. Idempotent. *)

val with_cluster : cpu:int -> (t -> 'a) -> 'a
(** [with_cluster ~cpu f] is [f] on a started cluster, stopped and removed
    afterwards whatever [f] does. *)

val url : t -> string
(** [postgres://postgres@127.0.0.1:PORT/hello_world]. *)

val server_pids : t -> int list
(** The postmaster and its backends now (for their CPU time). *)

val query : t -> string -> string
(** [query db sql] is [psql]'s unaligned, tuples-only output of [sql] on
    [hello_world] (fields separated by [|], one row a line).
    @raise Failure if psql fails. *)

val fortunes : (int * string) list
(** The 12 fortunes of TFB's database, by id. *)

val version : unit -> string
(** [postgres --version] of the binaries used. *)
