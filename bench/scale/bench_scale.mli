(** The [scale] benchmark: how throughput, CPU per request and memory per
    connection change from 10 to 10,000 keep-alive connections, for Braid
    ([braid serve], one event loop), nginx (one worker process) and h2o (one
    thread), each serving the same 1 KiB file with no access log.

    - Throughput: [wrk -t1] pinned to core 1 with 10, 100, 1,000 and 10,000
      connections against each server pinned to core 0; requests per second, and
      the server's CPU time (user + system of all its processes, from
      [/proc/PID/stat]) per request wrk completed.
    - Memory: 10,000 connections each send one request, read the response and
      stay open and idle; the servers' resident memory ([VmRSS], summed over
      their processes) then, less before (after a few warm-up requests), divided
      by 10,000.

    Each round starts the three servers afresh and measures them in turn (braid,
    nginx, h2o, at each size); figures are medians over rounds. A run with any
    error (wrk's socket errors or non-2xx responses, a server that never held
    all of wrk's connections during the run, a failed idle connection, or one
    the server closed) makes its cell failed, shown as no figure with a count of
    failed runs.

    wrk and the idle connections need descriptors: this process raises its soft
    limit to 10,512 for the run (the hard limit must allow it; wrk inherits it).
    [braid serve] and h2o raise theirs to the hard limit, nginx's worker to what
    [worker_rlimit_nofile] says; Braid's banner must announce at least 10,000
    connections. *)

val experiment : Bench_harness.experiment

module Idle_clients = Idle_clients
(** The idle connections, for other benchmarks' protocols ([h2]). *)
