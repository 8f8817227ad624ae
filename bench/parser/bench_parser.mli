(** The [parser] experiment: Braid's effects-based request parser against an
    Angstrom parser of the same grammar, on browser-like requests fed whole, in
    64-byte and in 1-byte chunks. *)

val experiment : Bench_harness.experiment
