(** Benchmarks of [braid_io], each next to an Lwt_unix peer in the same run.

    Servers and timer workloads run in forked child processes, so that each peer
    starts from a fresh heap and the parent can read their CPU time. *)

val echo : Bench_harness.experiment
(** [echo]: 100 connections ping-ponging 64-byte messages against a Braid_io
    echo server and against an Lwt_unix one, each in its own process, driven by
    the same client: round trips per second, and server CPU time per round trip.

    The server runs on core 0 and the client on core 1. The client is one raw
    epoll loop that never sleeps (it polls with a zero timeout), so that it
    costs the server no wake-ups and itself as little as possible per round
    trip; the share of its time in polls that found nothing says whether the
    server was the bottleneck. With [BRAID_BENCH_ROLE] set to [io-echo-braid] or
    [io-echo-lwt] ([BRAID_BENCH_PORT] gives the port) the binary is only that
    server, and with [io-echo-client] ([BRAID_BENCH_SECONDS],
    [BRAID_BENCH_SPIN=1]) only the client, for profiling by hand. *)

val timers : Bench_harness.experiment
(** [timers]: 100,000 concurrent sleepers sharing one deadline, as Braid_io
    fibers ([Time.sleep_until]) and as Lwt threads ([Lwt_unix.sleep]): memory
    per sleeper (RSS and OCaml heap), time to start them all, and time from the
    deadline until the last one has woken. *)

val wake : Bench_harness.experiment
(** [io-wake]: an IO fiber awaits promises that a spinning worker domain fills
    at once or after 10 or 100 us of work: the wake-up cost beyond that work
    (median and 99th percentile); and the CPU use of the loop's thread when it
    only sleeps, and when another domain wakes it every 2 ms. *)
