(** The [static] benchmark: keep-alive GETs of a 1 KiB, a 64 KiB and a 1 MiB
    file at 100 connections, for Braid ([braid serve], one event loop), nginx
    (one worker, [sendfile on]) and h2o (one thread), each serving the same
    files with no access log.

    [wrk -t1 -c100] pinned to core 1 against each server pinned to core 0:
    requests per second, and the server's CPU time (user + system of all its
    processes, from [/proc/PID/stat]) per request wrk completed. Each round
    starts the three servers afresh, checks that each serves every file intact,
    warms them up, then measures them in turn at each size (braid, nginx, h2o,
    then the next size); figures are medians over rounds. A run in which wrk saw
    any error (a socket error or a status outside 2xx and 3xx) makes its cell
    failed: no figure, and a count of failed runs. *)

val experiment : Bench_harness.experiment
