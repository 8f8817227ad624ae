(** The servers the benchmarks start, as roles of the benchmark binary itself:
    run with [BRAID_BENCH_ROLE] set, it serves instead of benchmarking. So the
    benchmark needs no other build target, and each server is a process of its
    own that [taskset] can pin.

    Roles ([BRAID_BENCH_PORT] gives the port, [BRAID_BENCH_ROOT] the document
    root):
    - [braid-static]: [braid serve --root ROOT], one event loop, and
      [GET /debug/gc] (the server's allocation counters);
    - [braid-static-direct]: the same, its pipeline calling the production
      services directly instead of looking them up per request;
    - [cohttp-static]: {!Cohttp_static};
    - [braid-reverse-effects], [braid-reverse-direct]: [POST /reverse] and
      [GET /debug/gc], with the pipeline looking its services up (one effect per
      request) or calling the production services directly. *)

val variable : string
(** ["BRAID_BENCH_ROLE"]. *)

val dispatch : unit -> unit
(** [dispatch ()] returns at once unless {!variable} names one of the roles
    above; then it serves in that role until killed and exits. Other roles are
    left to other experiments (the benchmark's entry point rejects a role nobody
    claimed). *)
