(** The emitting side: what the schedulers call. Callable from any domain or
    systhread; none blocks. Off, each is one load and a branch that is not
    taken. On, each writes to the ring without allocating: one write of the
    runtime's integer type per value (a fork's child and parent are two), except
    {!Probe.http_began}, whose strings need a custom type, which the runtime
    encodes by calling back into OCaml (three times the cost; the standard
    library allocates a closure for it). A value that does not fit an int event
    (from 2{^ 31} on, as a timer's deadline; a response of 2 MiB or more) makes
    its event a custom one too: never cut, only dearer. Identifiers are those of
    [Braid.Fiber.self_id] for fibers. *)

val enabled : unit -> bool
(** Whether the probes write events now. *)

val enable : unit -> unit
(** [enable ()] starts the runtime's event collection ([Runtime_events.start])
    and switches the probes on, for every domain of the process. Call it before
    the work to trace: a domain that reads the switch a little late misses a few
    events. *)

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
(** The next suspension on this domain waits for this descriptor. An event of
    its own, which the {!Recorder} gives to that suspension: call it just before
    suspending, on the same domain. *)

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
    limit). *)

val loop_woken_by : events:int -> unit
(** ... and woke with [events] descriptors ready (its eventfd among them). *)

val http_began :
  fiber:int -> meth:string -> path:string -> request_id:string -> unit

val http_ended : fiber:int -> status:int -> bytes:int -> unit

(** {2 For consumers} *)

(** What each registered event is. Each is registered under {!name}, of
    [Runtime_events.Type.int] (which keeps 32 bits), and under [name ^ ".wide"],
    of Braid's custom type (three integers, three strings), for values that do
    not fit; [Http_begin] only has the custom form, [Operand] only the int one.
    The int forms are private: read events with a {!Recorder}. *)
type kind =
  | Fiber_create
  | Fiber_run
  | Fiber_suspend
  | Fiber_wait_descriptor
      (** What the domain's next [Fiber_suspend] waits on; see
          {!waiting_on_descriptor}. *)
  | Fiber_wait_timer
  | Fiber_wait_join
  | Fiber_cancel
  | Fiber_finish
  | Switch_open
  | Switch_close
  | Pool_submit
  | Pool_steal
  | Pool_run
  | Loop_wait
  | Loop_woken
  | Http_begin
  | Http_end
  | Operand
      (** The first value of the domain's next event, when that event has two (a
          fork's parent, a response's fiber, ...). *)

type Runtime_events.User.tag +=
  | Braid of kind  (** The tag of each Braid event. *)

val name : kind -> string
(** The event's registered name, ["braid.fiber.create"] and so on. *)
