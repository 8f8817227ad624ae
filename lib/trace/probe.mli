(** The emitting side: what the schedulers call. Callable from any domain or
    systhread; none blocks the fiber or the domain, and none is a cancellation
    point. Off, each is one load and a branch that is not taken. On, each writes
    one record, stamped with the monotonic clock, into its domain's buffer (one
    C call that neither allocates nor polls, so the domain's other systhreads
    cannot interleave with it), and the buffer goes to the runtime's ring as one
    event (["braid.records"], 1016 bytes at most) when it is full, when its
    domain goes to sleep ({!loop_waiting}, {!flush}) or ends. Until then a
    consumer does not see its records; their times are those of the probes.
    Values are kept whole, strings cut to 256 bytes. Identifiers are those of
    [Braid.Fiber.self_id] for fibers. *)

val enabled : unit -> bool
(** Whether the probes write events now. *)

val enable : unit -> unit
(** [enable ()] starts the runtime's event collection ([Runtime_events.start])
    and switches the probes on, for every domain of the process. Call it before
    the work to trace: a domain that reads the switch a little late misses a few
    events. *)

val flush : unit -> unit
(** [flush ()] sends the calling domain's records to the ring now (when on). For
    a scheduler about to sleep, so that a consumer sees what its domain did
    before; and for a program that reads its own ring. *)

val disable : unit -> unit
(** [disable ()] switches the probes off (the runtime's own GC events go on
    until [Runtime_events.pause]). *)

(** What a fiber is suspended on, when the code that suspends it says so (the
    loop does; braid.sync's structures do not, and are [Structure]). *)
type waiting_on =
  | Structure  (** A synchronisation structure (promise, mutex, ...). *)
  | Descriptor  (** A file descriptor; its number is the event's detail. *)
  | Timer  (** A timer; its deadline (monotonic ns) is the detail. *)
  | Join  (** Another fiber's end; its id is the detail. *)

val fiber_created : child:int -> parent:int -> unit
(** A fiber [parent] forked [child] (not yet running). *)

val fiber_running : int -> unit
(** The fiber starts or resumes running on the calling domain. *)

val fiber_suspended : int -> unit
(** The fiber stops running: it suspends, on what the last [waiting_on_*] of
    this domain said, if anything. *)

val waiting_on_descriptor : Unix.file_descr -> unit
(** The next suspension on this domain waits for this descriptor: noted in the
    domain's buffer (no record, no clock), and written with that suspension.
    Call it just before suspending, on the same domain. *)

val waiting_on_timer : deadline_ns:int -> unit
val waiting_on_join : int -> unit

val fiber_cancelled : int -> unit
(** Cancellation was requested for the fiber (it wakes at its blocking call). *)

val fiber_finished : int -> unit

val switch_id : unit -> int
(** A fresh switch identifier while events are on, [0] when off (so that an
    untraced switch pays no atomic increment). *)

val switch_opened : switch:int -> fiber:int -> unit
val switch_closed : switch:int -> unit

val pool_submitted : task:int -> submitter:int -> unit
(** A pool task (run in fiber [task]) was submitted by fiber [submitter] ([0]:
    not a fiber). *)

val pool_stolen : thief:int -> victim:int -> unit
(** Worker [thief] took a task from worker [victim]'s deque. *)

val pool_running : task:int -> unit

val loop_waiting : timeout_ms:int -> unit
(** An event loop goes to sleep in epoll for at most [timeout_ms] ([-1]: no
    limit): its domain's records go to the ring ({!flush}), and the time is
    noted. *)

val loop_woken_by : events:int -> unit
(** ... and woke with [events] descriptors ready (its eventfd among them): one
    record for the whole sleep. *)

val http_began :
  fiber:int -> meth:string -> path:string -> request_id:string -> unit

val http_ended : fiber:int -> status:int -> bytes:int -> unit
