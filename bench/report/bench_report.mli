(** Renders [docs/benchmarks.md] from [bench/results/*.json]: for each
    experiment the question, the published figure it reproduces, the setup and
    command, a table, and an SVG chart drawn by gnuplot ([docs/bench/NAME.svg];
    skipped with a note if gnuplot is missing). *)

val render : unit -> string
(** [render ()] writes the report and returns its path. Experiments without a
    results file are listed as not run yet. *)
