(** Admission: the server-wide connection slots ([max_connections]), the
    connections per client address ([max_connections_per_client]), and making
    room at the limit by closing a connection idle long enough. Internal to the
    server.

    One [t] per server, shared by every loop: its functions may be called from
    any domain. The limits are read from the configuration in force at each
    call, so a reload changes them for the next connection. *)

type t

val create : config:Config.t Atomic.t -> metrics:Metrics.t option -> t
(** [create ~config ~metrics] admits against the limits of [Atomic.get config]
    and counts into [metrics] the connections refused (over a client's cap, or
    closed to make room) and closed. *)

val active : t -> int
(** The slots taken now, over all loops (an accept in progress counts as one).
*)

val try_acquire : t -> bool
(** [try_acquire t] takes a slot if one is free under the current limit. Never
    waits. *)

val make_room : t -> Connection.context -> unit
(** [make_room t context] takes a slot for a connection already accepted at the
    limit (someone does wait). It closes the connections of [context] (this
    loop's) idle for a second or more, one per slot it fails to get, so that a
    flood of idle connections denies no one; when none can be closed, it waits
    for a slot to be freed, looking again every 50 ms (connections just
    accepted, or busy, become idle without freeing a slot).

    Blocks the calling fiber, which must be one of [context]'s loop with the
    server's services in force (their clock). If the fiber is cancelled, it
    raises {!Braid.Cancelled} holding no slot. *)

val release : t -> unit
(** [release t] gives a slot back (and counts a connection closed), waking a
    fiber waiting in {!make_room} or {!await_none}. Not cancellable: a slot is
    never lost. *)

val await_none : t -> unit
(** [await_none t] blocks the calling fiber until no slot is taken.
    @raise Braid.Cancelled if the fiber is cancelled. *)

val admit_client : t -> Unix.sockaddr -> bool
(** [admit_client t peer] counts a connection in for [peer]'s address, unless
    that address is at its cap ([false]). A Unix-domain peer, and any peer when
    the configuration sets no cap for it, is always admitted. Never waits. *)

val leave_client : t -> Unix.sockaddr -> unit
(** [leave_client t peer] gives back what {!admit_client} counted for [peer]. *)

val ended : t -> Unix.sockaddr -> unit
(** [ended t peer] gives back what an admitted connection holds: its client's
    count and its slot. The connection context's [ended]. *)

val refuse : t -> Braid_io.Net.socket -> slot:bool -> unit
(** [refuse t socket ~slot] answers a connection over its client's cap [503]
    ("too many connections from you") and closes it, counted as refused. It
    holds a slot only if [slot] (one was free when it came), given back then:
    room is never made for it (a client at its cap must not close other clients'
    connections). Blocks the calling fiber while writing; meant for a fiber of
    its own. *)
