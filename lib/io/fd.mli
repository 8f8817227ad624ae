(** Descriptors owned by an event loop: wait for them, read and write them in
    direct style.

    An [Fd.t] belongs to the loop of the fiber that created it and to a
    {!Braid.Switch.t}, which closes it when it finishes. Its operations block
    only the calling fiber: they try the system call first and, when it would
    block, suspend the fiber until epoll reports the descriptor ready. They must
    be called from fibers of the owning loop (an [Invalid_argument] otherwise),
    except {!close}, which may be called from anywhere. Several fibers may wait
    on the same descriptor; readiness wakes them all and they retry.

    {!Net.socket} is this type, so sockets can be waited for directly. *)

type t = Loop.fd

exception Error of { op : string; error : Unix.error; detail : string }
(** {!Braid_io.Io_error}, braid.io's one exception, under the name it had first:
    an operation failed, [op] names it (["read"], ["write"], ["accept"],
    ["connect"], ["listen"], ["shutdown"], ["close"], ...), [error] says why,
    and [detail] is [""] (a descriptor has no path to name). Using a closed
    descriptor, or closing it while a fiber waits on it, gives [Unix.EBADF].
    [EINTR] and [EAGAIN] never surface: they are retried or waited out. *)

val of_unix : sw:Braid.Switch.t -> Unix.file_descr -> t
(** [of_unix ~sw fd] takes ownership of [fd]: sets it non-blocking, registers it
    with the calling fiber's loop, and closes it when [sw] finishes. Pipes,
    sockets, terminals and eventfds can be waited for; regular files are always
    ready (their reads never wait for the loop).

    Raises [Invalid_argument] outside a fiber of {!Braid_io.run} or if [sw] has
    finished (then [fd] is closed). *)

val pipe : sw:Braid.Switch.t -> unit -> t * t
(** [pipe ~sw ()] is [(read_end, write_end)] of a new pipe, owned by [sw]. *)

val to_unix : t -> Unix.file_descr
(** The underlying descriptor, for options ([Unix.setsockopt]) and the like. Do
    not close it behind the loop's back: use {!close}. *)

val is_open : t -> bool

val await_readable : t -> unit
(** [await_readable fd] returns when [fd] may have become readable since the
    caller last got [EAGAIN] from it; the wake-up can be spurious. Blocks only
    the calling fiber. A cancelled wait leaves no registration behind.
    @raise Error
      [{op = "await_readable"; error = EBADF}] if [fd] is or gets closed.
    @raise Braid.Cancelled if the fiber is cancelled (woken at once). *)

val interrupt : t -> exn -> unit
(** [interrupt fd e] wakes the fibers waiting for [fd] to become readable
    ({!await_readable}, {!await_input}, a read) with [e], raised from their
    wait; [fd] stays open and registered, and later waits are not affected. A
    server uses it to move an idle connection's wait elsewhere. Never blocks;
    only on [fd]'s loop thread.

    Raises [Invalid_argument] on another thread.
    @raise Error [{op = "interrupt"; error = EBADF}] if [fd] is closed. *)

val await_writable : t -> unit
(** Like {!await_readable}, for writing. *)

val await_input : t -> unit
(** [await_input fd] returns at once if a read of [fd] may find bytes now (none
    was read since the last readiness event, or the peer hung up), else waits as
    {!await_readable}. A caller can thus hold no buffer while it waits for
    input, and take one only to read. Blocks only the calling fiber.
    @raise Error
      [{op = "await_input"; error = EBADF}] if [fd] is or gets closed.
    @raise Braid.Cancelled if the fiber is cancelled (woken at once). *)

val may_have_input : t -> bool
(** [may_have_input fd] is false if the last read of [fd] found nothing more to
    read and no readiness event came since: {!await_input} would wait. *)

val watch_input : t -> unit Braid.resumer -> unit
(** [watch_input fd resumer] waits for input on [fd] with no fiber: [resumer] is
    called once, on [fd]'s loop thread, with [Ok ()] when [fd] may have become
    readable (by the loop, outside any fiber), or with an error when [fd] is
    closed or {!interrupt}ed (the exception given; then synchronously in the
    fiber that closed or interrupted it, which may hold a lock). So it must
    neither raise, suspend nor take a lock, and should only hand the work to a
    fiber. A server keeps thousands of idle connections this way, each costing
    no fiber stack. Call it when {!may_have_input} is false, or the resumer may
    wait for bytes that are already there. One watch at a time per descriptor (a
    second one raises [Invalid_argument]); a watch allocates nothing. Only on
    [fd]'s loop thread.
    @raise Error [{op = "watch_input"; error = EBADF}] if [fd] is closed. *)

val io_budget : int
(** Fairness: the reads and writes ({!read_into}, {!write_all}, {!write_string},
    and [Net]'s) a fiber may start in a row without the loop switching fibers:
    64. The next one first yields ({!Braid.Fiber.yield}), so the other runnable
    fibers run, and the loop looks at the descriptors and timers, before it goes
    on. A fiber whose socket always has data (a flooding peer) or room thus
    cannot starve the others. The cost is one increment and comparison per
    operation, and a yield per 64 operations only for a fiber that never waits.
*)

val read_would_block : t -> unit
(** [read_would_block fd] tells the loop that a read of [fd] made by other means
    than {!read_into} (a TLS library reading the descriptor itself) got
    [EAGAIN]: the next {!await_input} waits for [fd] to become readable instead
    of returning at once. Only on [fd]'s loop thread. *)

val spend : t -> unit
(** [spend fd] counts one operation on [fd] made by other means than this
    module's against {!io_budget}, yielding when the budget is spent, so that
    such code is as fair as {!read_into}.
    @raise Braid.Cancelled if the fiber is cancelled while yielding. *)

val read_into : t -> bytes -> int -> int -> int
(** [read_into fd buf off len] reads at most [len] bytes into [buf] at [off] and
    returns how many, [0] at end of file (or if [len = 0]). Blocks only the
    calling fiber, until some data is available (or it yields, see
    {!io_budget}).

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error [{op = "read"; _}]
    @raise Braid.Cancelled if the fiber is cancelled while waiting or yielding.
*)

val write_all : t -> bytes -> int -> int -> unit
(** [write_all fd buf off len] writes the [len] bytes of [buf] at [off], waiting
    (this fiber only) whenever the descriptor is full. On a socket a vanished
    peer gives [EPIPE], never a [SIGPIPE].

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error [{op = "write"; _}]
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting or yielding ({!io_budget}); part
      of the data may have been written. *)

val write_string : t -> string -> unit
(** [write_string fd s] writes all of [s], as {!write_all}. *)

val close : t -> unit
(** [close fd] closes [fd] now: removes it from epoll and wakes the fibers
    waiting on it (they raise {!Error} with [EBADF]). Idempotent; the switch
    that owns [fd] will not close it again. Called from another thread than the
    loop's, the loop closes it shortly after.
    @raise Error
      [{op = "close"; _}] if [close(2)] reports an error (the descriptor is
      released anyway). *)
