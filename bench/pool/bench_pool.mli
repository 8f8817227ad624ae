(** Benchmarks of [braid_pool]. *)

val fib : Bench_harness.experiment
(** [fib]: recursive fib 32, with subtasks down to a sequential cutoff of 20, on
    pools of 1 and 2 worker domains, next to plain sequential code and to a
    static two-domain split; wall time (median) and speed-up. Also the CPU an
    idle pool uses. *)

val pool_overhead : Bench_harness.experiment
(** [pool-overhead]: nanoseconds per [async] + [await] of a trivial task, from
    outside the pool and from inside a task, next to a FIFO fork + join and a
    [Domain.spawn] + [join]. *)
