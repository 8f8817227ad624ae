(** The servers the benchmarks start, as roles of the benchmark binary itself:
    run with [BRAID_BENCH_ROLE] set, it serves instead of benchmarking. So the
    benchmark needs no other build target, and each server is a process of its
    own that [taskset] can pin.

    Roles ([BRAID_BENCH_PORT] gives the port, [BRAID_BENCH_ROOT] the document
    root):
    - [braid-static]: [braid serve --root ROOT], one event loop;
    - [braid-static-direct]: the same with direct calls instead of effects;
    - [cohttp-static]: {!Cohttp_static};
    - [braid-reverse-effects], [braid-reverse-direct]: [POST /reverse] and
      [GET /debug/gc] (the server's allocation counters), with the pipeline
      performing effects or calling the services directly. *)

val variable : string
(** ["BRAID_BENCH_ROLE"]. *)

val dispatch : unit -> unit
(** [dispatch ()] returns at once unless {!variable} names one of the roles
    above; then it serves in that role until killed and exits. Other roles are
    left to other experiments (the benchmark's entry point rejects a role nobody
    claimed). *)
