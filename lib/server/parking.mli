(** Fiberless parking: an idle socket connection (plain or TLS) waits for its
    next request with no fiber, as its registry record and its socket's
    registration in the loop's epoll ({!Braid_io.Fd.watch_input}); input wakes
    it, and it is queued for a fiber: one whose own connection has just parked
    or ended, an {e idle worker} waiting for one, or one the unparker spawns
    ({!Connection.unpark}). Also when a connection waits in its fiber instead
    (few idle connections) and when it parks at once (a crowd).

    Confined to the loop's domain. The wake-ups ({!wake_parked}, {!wake_secure})
    run on the loop outside any fiber and never block. Internal. *)

open Registry

val crowd_in_fibers : int
(** Connections waiting in their fibers beyond which an idle one with nothing to
    read parks at once: 32. *)

val wake_parked : context -> plain -> unit Braid.resumer
(** The resumer of a parked plain connection's watch: input, or an error (it is
    to be closed). Gives the connection to an idle worker, or queues it for the
    unparker. [false] if it was not parked. *)

val wake_secure : context -> secure -> unit Braid.resumer
(** As {!wake_parked} for a TLS connection (queued for the unparker). *)

val wake_unparker : context -> unit
(** Wakes the unparker if it waits ({!await_woken}). *)

val stop_idle_workers : context -> unit
(** Ends the idle workers' waits: their fibers end (at a drain). *)

val awaiting_input : context -> Config.t -> (unit -> unit) -> Progress.t -> unit
(** [awaiting_input c config await progress] is [await ()], after giving the
    connection's buffers back if many connections hold some. Blocks the fiber as
    [await] does. *)

val wait_in_fiber : context -> Config.t -> Progress.t -> (unit -> unit) -> unit
(** As {!awaiting_input}, counted among the connections waiting in their fibers.
*)

val settle_readiness : Braid_io.Net.socket -> unit
(** A socket the loop has seen no edge of yet (fresh, or read by OpenSSL) counts
    as readable: a peek tells whether a request is there, and if not the loop is
    told that a read would block. *)

val park_if_crowded : context -> Progress.t -> Braid_io.Net.socket -> unit
(** With {!crowd_in_fibers} connections or more waiting in their fibers and
    nothing to read on the socket (and no drain), gives the connection's buffers
    back and raises [Unwind.Park]: the pipeline returns {!Pipeline.Parked}. *)

val park_plain : context -> plain -> bool
(** [park_plain c p], once [p]'s pipeline returned [Parked]: [true] if [p] now
    waits with no fiber (its socket watched); [false] if it must wait in its
    fiber instead (doomed, input already there, or the server draining). *)

val next_plain : context -> plain option
(** The next woken plain connection for a fiber whose connection parked or
    ended; none queued, the fiber waits for one as an idle worker (while fewer
    than four do and the server is not draining). [None]: nothing to do, the
    fiber may end. Blocks the fiber while it waits.
    @raise Braid.Cancelled if the fiber is cancelled while it waits. *)

val park_secure : context -> secure -> [ `Watching | `Stays | `Failed ]
(** As {!park_plain} for a TLS connection (also staying when OpenSSL holds
    bytes); [`Failed]: its socket cannot be watched, to be closed. *)

val next_secure : context -> secure option
(** The next woken TLS connection, if any; never blocks. *)

val await_woken : context -> unit
(** The unparker's wait until a connection is woken or the server drains.
    @raise Braid.Cancelled if its fiber is cancelled. *)

val close_parked : context -> unit
(** See {!Connection.close_parked}. *)
