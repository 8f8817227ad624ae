(** What the loop waits in: epoll or an io_uring ring, chosen per loop. Both
    report readiness edges of the descriptors added, as (token, flags) events
    with {!module-Epoll}'s flags; the loop's dispatch, wake-up protocol and
    retry helper ({!Handle.nonblocking}) are the same over either. Internal.
    Only the thread that created a poller may use it. *)

type backend = Epoll | Uring

val backend_of_string : string -> backend option
(** ["epoll"] or ["uring"]. *)

val string_of_backend : backend -> string

val default_backend : unit -> backend
(** The backend a loop gets when none is asked for: [BRAID_IO_BACKEND]
    (["uring"] or ["epoll"]) if set, else [Epoll] (the one that measured better
    here: docs/io.md, Backends).

    Raises [Invalid_argument] if [BRAID_IO_BACKEND] names neither. *)

type t

val create : backend -> events:int -> t
(** [create backend ~events] is a poller of [backend] reporting up to [events]
    events per {!wait}. If io_uring is asked for and the kernel refuses a ring
    (no io_uring, [kernel.io_uring_disabled], a seccomp filter, the
    locked-memory limit), it is epoll, and the first such fallback in the
    process prints one line on standard error saying why.
    [BRAID_IO_URING_SIMULATE=ENOSYS] (or [EPERM]) makes every ring creation fail
    so, to test that path.

    Raises [Unix.Unix_error] if epoll itself fails. *)

val backend : t -> backend
(** What [t] really is, after any fallback. *)

val close : t -> unit

val add :
  t -> Unix.file_descr -> Epoll.flags -> token:int -> socket:bool -> unit
(** [add t fd flags ~token ~socket] watches [fd], edge-triggered, for [flags]
    from the next {!wait} on; [socket] says that [fd] is a socket (io_uring then
    skips the check that epoll could watch it).

    Raises [Unix.Unix_error (EPERM, _, _)] for a descriptor that cannot be
    polled (a regular file, a directory), as epoll does. *)

val arm : t -> int -> unit
(** [arm t token] is called before a fiber waits for [token]'s readiness:
    io_uring polls a socket only from then on ({!Uring_poller.arm}); nothing for
    epoll, which watches from {!add} on. *)

val completion_ops : t -> Uring_ops.t option
(** Socket reads and writes on the ring, if [t] is io_uring with them on. *)

val op_waiters : t -> int
(** Fibers suspended in a {!completion_ops} operation. *)

val remove : t -> Unix.file_descr -> token:int -> unit
(** [remove t fd ~token] stops watching [fd]: no later event carries [token]
    until it is added again. [fd] may be closed right after. *)

val wait : t -> timeout_ms:int -> int
(** [wait t ~timeout_ms] waits up to [timeout_ms] ([-1]: no limit, [0]: do not
    block) for events and returns how many {!token} and {!flags} describe.
    Returns 0 early on a signal. Blocks the domain (releasing the runtime lock)
    only when [timeout_ms] is not 0. *)

val token : t -> int -> int
val flags : t -> int -> Epoll.flags
