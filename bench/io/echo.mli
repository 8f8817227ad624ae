(** The [echo] experiment; see {!Bench_io.echo}. *)

val experiment : Bench_harness.experiment

val load_average : unit -> float
(** The one-minute load average, [nan] if unknown. *)
