(** The [echo] experiment; see {!Bench_io.echo}. *)

val experiment : Bench_harness.experiment
