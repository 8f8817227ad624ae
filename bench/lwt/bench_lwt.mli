(** Benchmarks of [braid_lwt]. *)

val experiment : Bench_harness.experiment
(** [lwt-bridge]: nanoseconds per round trip Lwt thread -> Braid fiber -> Lwt
    thread through two Braid MVars, with the fiber in the bridge itself (same
    domain), on a FIFO scheduler of another domain, and on an IO loop of another
    domain; next to the same ping-pong between two Lwt threads through
    [Lwt_mvar], in the same run. Also a pipelined stream through channels of
    capacity 64 to another domain and back. *)
