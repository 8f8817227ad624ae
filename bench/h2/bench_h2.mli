(** The [h2] benchmark: HTTP/2 served by Braid ([braid serve], one event loop),
    h2o (one thread) and nginx (one worker), each pinned to core 0 with no
    access log, measured by h2load ([-t 1], pinned to core 1).

    - Throughput: over h2c (prior knowledge) and over TLS (h2 by ALPN), with 10
      and 100 connections of 1, 10 and 100 concurrent streams each
      ([h2load -m]), for a 1 KiB and a 64 KiB file: requests per second, and the
      server's CPU time (user + system of its processes, from [/proc]) per
      request h2load completed.
    - Memory: idle h2c connections, each having sent one request and read its
      answer ({!Idle_h2}), measured as the [scale] benchmark measures idle
      HTTP/1.1 connections: the servers' resident memory after, less before
      (after warm-up connections of their own), per connection.

    Each round starts the servers afresh for each transport and runs every cell
    with the servers in turn, the turn rotated from round to round; figures are
    medians over rounds, with Braid's ratio to each peer in its lowest and
    highest round. A run in which h2load saw any error (a failed, errored or
    timed-out request, a status other than 2xx) is a failed cell, shown as a
    count, not a figure. *)

val experiment : Bench_harness.experiment
