(** The [io-wake] experiment; see {!Bench_io.wake}. *)

val experiment : Bench_harness.experiment
