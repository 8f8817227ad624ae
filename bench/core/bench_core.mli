(** Experiments on the core: the Suspend contract, the FIFO scheduler and the
    structures. *)

val producer_consumer : Bench_harness.experiment
(** The thesis's Table 6.1: 1-slot handoff cost. *)

val cancellation_cost : Bench_harness.experiment
(** The thesis's §6.3: how much cancelling producers slows an exchange. *)
