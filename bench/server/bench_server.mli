(** The HTTP server's benchmarks.

    - [http]: wrk's keep-alive GETs of a 1 KiB static file, 100 connections, the
      server pinned to core 0 and wrk to core 1: Braid versus nginx (one worker,
      access log off) and a cohttp-lwt-unix static server, in the same run.
    - [reverse-post]: the 2022 study's protocol: sequential POSTs to [/reverse]
      of 10 to 100 KB on one keep-alive connection, and the server's allocation
      over 100-byte POSTs, for the same pipeline with effects and with direct
      calls.

    Servers run as separate processes: this binary re-executed in a role
    ({!Roles}), or nginx. *)

val http : Bench_harness.experiment
val reverse_post : Bench_harness.experiment

module Procs = Procs
(** Server processes, shared with other experiments that run servers. *)
