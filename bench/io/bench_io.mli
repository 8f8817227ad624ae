(** Benchmarks of [braid.io], each next to an Lwt_unix peer in the same run.

    Servers and timer workloads run in forked child processes, so that each peer
    starts from a fresh heap and the parent can read their CPU time. *)

val echo : Bench_harness.experiment
(** [echo]: 100 connections ping-ponging 64-byte messages against a Braid_io
    echo server and against an Lwt_unix one, each in its own process, driven by
    the same Braid_io client process: round trips per second, and server CPU
    time per round trip. *)

val timers : Bench_harness.experiment
(** [timers]: 100,000 concurrent sleepers sharing one deadline, as Braid_io
    fibers ([Time.sleep_until]) and as Lwt threads ([Lwt_unix.sleep]): memory
    per sleeper (RSS and OCaml heap), time to start them all, and time from the
    deadline until the last one has woken. *)
