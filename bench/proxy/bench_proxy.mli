(** The HTTP client's and the reverse proxy's benchmarks.

    - [client]: requests per second and CPU per request of [braid_client]
      against a fixed server (nginx, one worker, on core 1), beside Go's
      [net/http] client doing the same (bench/peers/client-go, built by
      bench/peers/build-client.sh): N fibers or goroutines each [GET] a small
      file in a loop over keep-alive connections and read each body whole, the
      client pinned to core 0. Each client reports its own CPU time (getrusage),
      so the figure is the client's alone.
    - [proxy]: wrk (core 1) through a proxy (core 0) to one upstream (nginx
      serving files, core 1): [braid serve] with [ProxyPass], nginx
      ([proxy_pass], upstream keep-alive 64, buffers of 16 × 8 KiB: a 64 KiB
      answer in memory) and haproxy ([mode http], one thread, keep-alive both
      sides); a small file and a 64 KiB one, keep-alive, req/s and the proxy's
      CPU per request from /proc. A wrk error fails the run: its cell shows
      [nan] and a count of failed runs.

    Rounds interleave the contenders (the order reversed every other round) and
    the tables give the median with the spread over rounds. *)

val client : Bench_harness.experiment
val proxy : Bench_harness.experiment

val dispatch : unit -> unit
(** [dispatch ()] returns at once unless [BRAID_BENCH_ROLE] is [braid-client]:
    then this process is the Braid client of [client] (its URL, connections and
    seconds in [BRAID_BENCH_URL], [BRAID_BENCH_CONNECTIONS] and
    [BRAID_BENCH_SECONDS]), prints ["REQUESTS CPU_SECONDS"] and exits (1, with
    the error on stderr, at the first failed request). *)
