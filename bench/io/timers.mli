(** The [timers] experiment; see {!Bench_io.timers}. *)

val experiment : Bench_harness.experiment
