(** Braid's trace events, on OCaml's [Runtime_events].

    The schedulers ([braid]'s fibers and switches, [braid_pool], [braid_io]'s
    loop) and the HTTP server call the {!Probe}s; a consumer reads the events
    back from the runtime's ring (this process's, or another's) with a
    {!Recorder}, and {!Chrome} writes them as a trace that Perfetto opens.
    [braid trace] is that consumer as a command, and [braid trace render] draws
    a trace as an SVG timeline (docs/tracing.md).

    Events are off until asked for, and then cost a load and an untaken branch
    per probe; on, a probe writes a record into its domain's buffer, which goes
    to the ring as one event when full or when the domain sleeps. They are
    switched on for a whole process, as the ring they go to is the runtime's,
    one per process:
    - [BRAID_TRACE=FILE] in the environment of a Braid program records its own
      events on a systhread and writes [FILE] (Chrome JSON) when it exits;
    - [BRAID_TRACE_EVENTS=1] (what [braid trace -- PROGRAM] sets, beside
      [OCAML_RUNTIME_EVENTS_START]) only switches the probes on, for a consumer
      in another process;
    - {!Probe.enable} from the program itself.

    A program that writes its own trace:
    {[
      let record f =
        Braid_trace.Probe.enable ();
        let recorder = Braid_trace.Recorder.of_self () in
        f ();
        (* This domain's last records are still in its buffer. *)
        Braid_trace.Probe.flush ();
        ignore (Braid_trace.Recorder.poll recorder : int);
        let events = Braid_trace.Recorder.events recorder in
        Braid_trace.Recorder.close recorder;
        events

      let events = record (fun () -> ())
    ]} *)

module Probe = Probe
(** The emitting side: what the schedulers call (see [probe.mli]). *)

module Event = Event
(** An event read back. *)

module Recorder = Recorder
(** Reading a ring back into events. *)

module Chrome = Chrome
(** Writing events as a Chrome trace-event JSON file, which Perfetto opens. *)

val start_from_environment : unit -> unit
(** [start_from_environment ()] acts on [BRAID_TRACE] and [BRAID_TRACE_EVENTS]
    (above), once per process; later calls do nothing. [braid]'s own
    initialisation calls it, so every Braid program honours them. *)
