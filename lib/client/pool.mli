(** Internal to [braid_client]: keep-alive connections, per event loop and per
    origin.

    A connection is a socket of one loop, so each loop has its own pools:
    {!checkout} on a fiber of loop A never returns a connection of loop B. The
    table of loops is shared by every domain (a short lock, never held across a
    suspension); a loop's own pools are touched only by its fibers, one at a
    time, so they need no lock.

    Per origin and per loop, at most [max_active] connections are checked out at
    once: a fiber beyond waits (this fiber only) for one to come back, as a
    semaphore's. At most [max_idle] wait idle; those idle longer than
    [idle_timeout] are closed when next looked at. *)

type t

val create : max_active:int -> max_idle:int -> idle_timeout:float -> t

type lease
(** A permit to use one connection to an origin, taken by {!acquire} and given
    back once by {!release} (whatever happens to the connection). *)

val acquire : t -> string -> lease
(** [acquire t origin] waits for a permit for [origin] on the calling fiber's
    loop.
    @raise Braid.Cancelled if the fiber is cancelled while it waits. *)

val checkout : lease -> Connection.t option
(** [checkout lease] is an idle connection of the lease's origin that passes
    {!Connection.looks_reusable}, the most recently used first; idle ones that
    do not pass, or waited beyond the idle timeout, are closed on the way. *)

val release : lease -> Connection.t option -> unit
(** [release lease (Some c)] gives [c] back to the idle list (or closes it if
    the list is full or [c] is closed) and the permit back; [release lease None]
    gives back only the permit. Only the first release of a lease counts: the
    rest do nothing, so an unwinding path and a finaliser may both call it. Any
    thread (a finaliser's): the idle list is then left alone, and the connection
    closed. *)

val buffer_size : int
(** 64 KiB: the size of {!take_buffer}'s buffers. *)

val take_buffer : lease -> bytes
(** [take_buffer lease] is a buffer of {!buffer_size} bytes of the lease's loop,
    one given back if there is one, for relaying a body. On the lease's loop. *)

val give_buffer : lease -> bytes -> unit
(** [give_buffer lease b] keeps [b] (taken by {!take_buffer}) for the loop's
    next body; the caller must not use it afterwards. On another domain, or with
    enough kept already, it is left to the collector. *)

val close_idle : t -> unit
(** [close_idle t] closes the idle connections of the calling loop. *)
