(** An io_uring instance as the loop's second backend: a readiness poller, with
    the same contract as {!Epoll} as the loop uses it (see {!Poller}). Each
    watched descriptor is one multishot [IORING_OP_POLL_ADD], edge-triggered
    like the loop's epoll registration; registrations and removals are queued in
    the submission ring and submitted together by the next {!wait}, so
    registering a connection costs no system call of its own ([epoll_ctl] costs
    one each way), and a {!wait} with a zero timeout that has nothing to submit
    reads the completion ring without entering the kernel. Its {!wait} also
    hands the completions of socket reads and writes made on the ring
    ({!Uring_ops}) back to their fibers.

    Only the thread that created the poller may use it (the ring is set up
    single-issuer). Errors are [Unix.Unix_error]. Internal. *)

type t

val create : events:int -> t
(** [create ~events] is a new ring whose {!wait} reports up to [events] events
    at a time.

    Raises [Unix.Unix_error] if the kernel refuses one ([ENOSYS]: no io_uring or
    too old a kernel (before 5.11); [EPERM]: [kernel.io_uring_disabled] or a
    seccomp filter; [ENOMEM]: the locked-memory limit). *)

val close : t -> unit
(** [close t] tears the ring down; its polls end with it. Idempotent. *)

val ops : t -> Uring_ops.t option
(** The completion-based operations on [t]'s ring; [None] if
    [BRAID_IO_URING_COMPLETION=0] (the ring then only polls: the mode measured
    before them). *)

val waiting : t -> int
(** Fibers suspended in an operation of {!ops}. *)

val add :
  t -> Unix.file_descr -> Epoll.flags -> token:int -> socket:bool -> unit
(** [add t fd flags ~token ~socket] watches [fd] for [flags] (readable,
    writable, read hang-up; always edge-triggered) from the next {!wait} on; its
    events carry [token]. With [BRAID_IO_URING_LAZY=1] and {!ops} on, a socket's
    poll is armed only at its first {!arm} (its reads and writes need none). A
    descriptor that epoll would refuse (a regular file, a directory,
    [/dev/null]) is refused the same way, at once: it is tried on a scratch
    epoll instance, unless [socket] says that [fd] is a socket (which can always
    be polled).

    Raises [Unix.Unix_error (EPERM, _, _)] for such a descriptor. *)

val arm : t -> int -> unit
(** [arm t token] makes sure that [token]'s descriptor is polled (from the next
    {!wait} on); readiness that came before is reported. Costs nothing once
    armed. *)

val remove : t -> Unix.file_descr -> token:int -> unit
(** [remove t fd ~token] stops watching [fd]; from now on no event carries
    [token] until it is added again, even one that the kernel had already
    posted. Its operations in flight are cancelled ({!Uring_ops.forget}). One
    system call, if it was polled or had operations in flight: the removal is
    submitted at once (with what else is queued), so that neither holds [fd]'s
    file when the caller closes it, and the close takes effect then (the peer
    sees it). *)

val wait : t -> timeout_ms:int -> int
(** [wait t ~timeout_ms] submits what is queued, waits until an event arrives or
    [timeout_ms] milliseconds have passed ([-1]: no limit; [0]: do not wait),
    and returns how many events {!token} and {!flags} now describe (at most
    [events] of {!create}). May return 0 early (a signal, or only stale
    completions). *)

val token : t -> int -> int
val flags : t -> int -> Epoll.flags
