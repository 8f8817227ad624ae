(** The Chrome trace-event JSON format. Chosen over Fuchsia's binary format
    (what eio-trace writes) because every viewer that matters opens it
    (Perfetto, chrome://tracing, speedscope), it needs no writer or reader of
    our own beyond a few lines (the renderer and the tests read it with yojson),
    and a person can read it; it is larger (about 100 bytes an event), which
    matters only for traces of minutes.

    Each domain is a thread; a fiber's running stretches are slices named
    [fiber N] (their [args] say what the fiber waited on next, and the request
    it works for), so suspensions are the gaps between them; the loop's sleeps
    are [wait] slices; requests are async slices [GET /path] with their status
    and bytes; the runtime's GC phases are nested slices of category [gc];
    creations, suspensions, cancellations and pool events are instants. *)

val write : out_channel -> Event.t list -> unit
(** [write oc events] writes [events] (in time order, as {!Recorder.events}
    gives them) as one JSON document. Pure output: any thread; blocks it while
    writing. Raises [Sys_error] as the channel does. *)

val to_file : string -> Event.t list -> unit
(** [to_file path events] is {!write} to a new file [path], closed on return.
    Raises [Sys_error] if it cannot be written. *)
