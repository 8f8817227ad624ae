(** [braid trace]: record a program's trace from outside it, and render a trace
    as SVG. A command of its own beside [serve], so that each can grow without
    touching the other. *)

val cmd : unit Cmdliner.Cmd.t
(** [braid trace [-o FILE] -- PROGRAM ARGS...] runs [PROGRAM] with the runtime's
    events on and Braid's probes switched on ([OCAML_RUNTIME_EVENTS_START],
    [BRAID_TRACE_EVENTS=1]), reads its ring from this process every 5 ms while
    it runs, and writes the Chrome JSON trace to [FILE] (default [trace.json])
    once it exits, then exits with the program's status. SIGINT is left to the
    program: [braid trace] writes what it recorded once the program has stopped.

    [braid trace render TRACE [-o FILE.svg]] draws [TRACE] as an SVG timeline
    (default: [TRACE] with [.svg] for [.json]). *)
