(** The error-handling study (Rzeźnicki, "Benchmarking Functional Error Handling
    in Scala", 2019), ported: the same business workload written with [result]
    and [let*], with exceptions, and with an effect-based failure handler; each
    synchronously, with its async boundary on the pool (the [Future] analogue)
    and as a fiber yield on the IO scheduler (the [IO] analogue). *)

val experiment : Bench_harness.experiment
