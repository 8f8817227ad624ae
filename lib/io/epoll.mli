(** A thin binding to Linux [epoll(7)] and [eventfd(2)].

    This is what the event loop is built on; it is exposed for tests and for
    code that wants its own loop. Every function here is a direct system call on
    the calling thread: only {!wait} with a non-zero timeout blocks, and it
    blocks the whole domain (releasing the runtime lock meanwhile, so other
    domains keep running). Errors are [Unix.Unix_error]. *)

type t
(** An epoll instance. *)

val create : unit -> t
(** [create ()] is a new epoll instance (close-on-exec). *)

val close : t -> unit
(** [close t] closes the instance; it forgets every registration. *)

(** {1 Interest} *)

type flags = int
(** A set of [EPOLL*] bits, combined with [lor]. *)

val readable : flags
(** [EPOLLIN]. *)

val writable : flags
(** [EPOLLOUT]. *)

val error : flags
(** [EPOLLERR], always reported. *)

val hang_up : flags
(** [EPOLLHUP], always reported. *)

val read_hang_up : flags
(** [EPOLLRDHUP]: the peer shut down its writing side. *)

val edge_triggered : flags
(** [EPOLLET]. *)

val add : t -> Unix.file_descr -> flags -> token:int -> unit
(** [add t fd flags ~token] watches [fd] for [flags]; its events carry [token]
    (a non-negative int chosen by the caller). *)

val modify : t -> Unix.file_descr -> flags -> token:int -> unit
val remove : t -> Unix.file_descr -> unit

(** {1 Waiting} *)

type events
(** A reusable buffer that {!wait} fills, so waiting allocates nothing. *)

val events : int -> events
(** [events n] holds up to [n] events ([n >= 1]; at most 512 are used). *)

val wait : t -> events -> timeout_ms:int -> int
(** [wait t buf ~timeout_ms] waits until some watched descriptor is ready or
    [timeout_ms] milliseconds have passed ([-1]: no limit, [0]: just poll) and
    returns how many events it stored in [buf]. A signal arriving meanwhile
    makes it return [0] early. *)

val token : events -> int -> int
(** [token buf i] is the token of the [i]th event stored by {!wait}. *)

val flags : events -> int -> flags
(** [flags buf i] is what the [i]th event reported. *)

(** {1 Eventfd} *)

val eventfd : unit -> Unix.file_descr
(** [eventfd ()] is a non-blocking, close-on-exec eventfd with count 0. *)

val eventfd_signal : Unix.file_descr -> unit
(** [eventfd_signal fd] adds one to the count, making [fd] readable. Safe to
    call from any thread. *)

val eventfd_drain : Unix.file_descr -> unit
(** [eventfd_drain fd] resets the count to 0 (does nothing if it was 0). *)
