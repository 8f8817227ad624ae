(** The event loop: a fiber scheduler on one thread that also waits for
    descriptors (edge-triggered, through epoll or io_uring: {!Poller}), timers
    and signals. Internal: the public face is {!Braid_io}, {!Fd}, {!Net},
    {!Time} and {!Signal}.

    Everything here except {!enqueue}, {!close} and the resumers it hands out
    must be called on the loop's own thread, from one of its fibers. *)

type t

val run : ?backend:Poller.backend -> (unit -> 'a) -> 'a
(** See {!Braid_io.run}. [backend] is {!Poller.default_backend} if omitted. *)

val backend : t -> Poller.backend
(** What [t] waits in (after any fallback to epoll). *)

val current : op:string -> t
(** [current ~op] is the loop of the calling fiber.

    Raises [Invalid_argument] naming [op] outside a fiber of {!run}. *)

val running_here : unit -> bool
(** [running_here ()] is true if the calling domain runs a loop. *)

val enqueue : t -> (unit -> unit) -> unit
(** [enqueue t task] runs [task] on the loop soon; from any thread, waking the
    loop if it sleeps. *)

val polls_here : unit -> int option
(** [polls_here ()] is how many times the loop of the calling thread has polled
    for events, or [None] on a thread that runs no loop. *)

val now_ns : unit -> int
(** Monotonic clock in nanoseconds (the one timers use). *)

val yield_background : t -> unit
(** See {!Braid_io.yield_background}. *)

val fork_daemon : t -> (unit -> unit) -> unit
(** See {!Braid_io.fork_daemon}; [t] is the caller's loop. *)

(** {1 Descriptors} *)

exception Closed
(** Raised by {!await} when the descriptor is (or gets) closed. *)

type fd
(** A descriptor registered with a loop. *)

val register :
  t -> Unix.file_descr -> socket:bool -> stream:bool -> op:string -> fd
(** [register t unix ~socket ~stream ~op] watches [unix] (already non-blocking).
    [socket]: writes use [send]. [stream]: a read that returns fewer bytes than
    asked drained the descriptor (true of stream sockets). A descriptor epoll
    cannot watch (a regular file) is accepted and never waited for.

    Raises [Invalid_argument] naming [op] off the loop's thread. *)

val unix : fd -> Unix.file_descr
val is_socket : fd -> bool

val token : fd -> int
(** The poller's name for [fd] (what {!Uring_ops} keys it by); [-1] if it is
    never waited for. *)

val completions : fd -> Uring_ops.t option
(** The ring's completion-based reads and writes, for a TCP socket ([~stream] at
    {!register}) of a loop on io_uring (unless [BRAID_IO_URING_COMPLETION=0]);
    [None] otherwise (datagram and Unix-domain sockets, pipes), and always on
    epoll. *)

val is_open : fd -> bool

(** {2 Readiness}

    Epoll is edge-triggered: it reports data arriving, not data present. The
    loop remembers whether a read could find something, so that a fiber that
    drained a socket waits for the next edge without first paying a read that
    fails with EAGAIN. *)

val may_be_readable : fd -> bool
(** False if the last read drained [fd] and no data arrived since. *)

val nothing_more_to_read : fd -> unit
(** [nothing_more_to_read fd] records that a read got EAGAIN (ignored once epoll
    has reported a hang-up: the end of stream is still to be read). *)

val io_budget : int
(** How many reads and writes a fiber may start without the loop switching
    fibers (64) before {!spend} makes it yield. *)

val spend : fd -> unit
(** [spend fd] counts one read or write on [fd]'s loop, and yields
    ({!Braid.Fiber.yield}) once the running fiber has started {!io_budget} of
    them since the loop last switched fibers: a fiber that always finds data
    ready cannot starve the others.
    @raise Braid.Cancelled if the fiber is cancelled and it yields. *)

val read_returned : fd -> wanted:int -> int -> unit
(** [read_returned fd ~wanted n] records that a read of [wanted] bytes got [n]:
    fewer (but some) on a TCP socket drained it, unless the peer hung up (its
    end of stream is still to be read). As in Tokio, urgent (out-of-band) data
    can also end a read early; a peer sending it then waits for its next bytes
    to be read. *)

val loop_of : fd -> t

val set_switch_release : fd -> Braid.Switch.hook -> unit
(** [set_switch_release fd hook] records the owning switch's release of [fd],
    which {!close} removes from the switch. *)

val check_usable : fd -> op:string -> unit
(** [check_usable fd ~op] checks that [fd] is open and that the caller runs on
    its loop's thread.

    Raises [Invalid_argument] naming [op] off the loop's thread.
    @raise Closed if [fd] is closed. *)

val await : fd -> write:bool -> op:string -> unit
(** [await fd ~write ~op] suspends the calling fiber until [fd] may be ready for
    reading (or writing). Spurious wake-ups are possible: retry the operation. A
    cancelled wait leaves no registration behind.

    Raises [Invalid_argument] naming [op] (["read"], say) if called off the
    loop's thread.
    @raise Closed if [fd] is or gets closed.
    @raise Braid.Cancelled if the fiber is cancelled. *)

val await_checked : fd -> write:bool -> unit
(** [await_checked fd ~write] is {!await} for a caller that ran {!check_usable}
    on [fd] in the same operation, without suspending since: an operation that
    waits several times checks ownership once (a fiber never changes thread),
    though it must still check {!is_open} after each wake-up.
    @raise Closed if [fd] gets closed.
    @raise Braid.Cancelled if the fiber is cancelled. *)

val interrupt_readers : fd -> exn -> unit
(** [interrupt_readers fd e] wakes the fibers waiting for [fd] to become
    readable, or in a read of it on the ring ({!Uring_ops.interrupt_reader}),
    with [e]; [fd] stays open and registered. Only on [fd]'s loop thread. *)

val watch_readable : fd -> unit Braid.resumer -> unit
(** [watch_readable fd resumer] registers [resumer] as a reader of [fd] without
    suspending anyone: it is called once, on the loop's thread and outside any
    fiber, with [Ok ()] at [fd]'s next readiness event (at once from the run
    queue if epoll cannot watch [fd]), or with the error of {!interrupt_readers}
    or {!Closed}, synchronously in the caller of those (which may be a fiber
    holding a lock: the resumer must take none). One watch at a time: it is kept
    in a field of [fd], so a watch costs no allocation, and a second one raises
    [Invalid_argument]. Only on [fd]'s loop thread.
    @raise Closed if [fd] is closed. *)

val close : fd -> unit
(** [close fd] removes [fd] from epoll, wakes its waiters with {!Closed} and
    closes it. Idempotent. From another thread, the loop does it soon.

    Raises [Unix.Unix_error] if [close(2)] fails (on the loop's thread only). *)

(** {1 Timers} *)

val add_timer : t -> deadline:int -> unit Braid.resumer -> Timer_heap.timer
(** [add_timer t ~deadline action] calls [action (Ok ())] on the loop (outside
    any fiber) once {!now_ns} reaches [deadline]. [action] must not raise. *)

val remove_timer : t -> Timer_heap.timer -> unit

val sleep_until : t -> deadline:int -> unit
(** [sleep_until t ~deadline] suspends the calling fiber until [deadline]. A
    cancelled sleep removes its timer.
    @raise Braid.Cancelled if the fiber is cancelled. *)

(** {1 Signals} *)

val watch_signals : t -> Unix.file_descr -> unit
(** [watch_signals t fd] makes the loop watch the process-wide signal eventfd
    [fd] (edge-triggered, never drained). Idempotent. *)

val await_signal_event : t -> unit
(** [await_signal_event t] suspends the calling fiber until the signal eventfd
    reports an edge. The caller checks which signal counters moved.
    @raise Braid.Cancelled if the fiber is cancelled. *)

(** {1 Introspection} *)

type stats = {
  fibers : int;  (** Fibers not yet finished, the caller included. *)
  open_fds : int;  (** Descriptors registered and not closed. *)
  fd_waiters : int;  (** Fibers waiting for a descriptor. *)
  timers : int;  (** Pending sleeps and timeouts. *)
  signal_waiters : int;  (** Fibers waiting for a signal. *)
}

val stats : t -> stats
