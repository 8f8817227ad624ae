(** The connections of one event loop: each served by the {!Pipeline} in a fiber
    (a socket's connection, plain or TLS, waits for its next request with no
    fiber once parked, see {!serve} and {!serve_tls}), registered so that one
    sweeping fiber per loop enforces their idle and send deadlines and a
    shutdown can close the idle ones.

    The face of five private modules: [Registry] (the table of connections,
    eviction, closing the idle), [Sweeper] (deadlines, parking the idle, memory
    after a burst), [Parking] (waiting with no fiber, and the wake-up),
    [Plain_socket] and [Tls_socket] (the transports and the life of a socket
    connection).

    Everything here runs in fibers of the loop that owns the context, with the
    server's services in force ({!Braid_web.Services.run}): the deadlines follow
    their clock. Internal to the server. *)

open Braid_web

type context
(** What the connections of one loop share: the [Date] cache, the draining flag,
    the connections in progress, spare buffers. Confined to that loop's domain.
*)

val context :
  ?draining:bool Atomic.t ->
  ?fixed_services:Services.t ->
  ?received:(int -> unit) ->
  ?handshaken:(Metrics.handshake -> unit) ->
  ?ended:(Unix.sockaddr -> unit) ->
  unit ->
  context
(** [context ()] is the context of one loop. [draining] is the server's
    "shutting down" flag (shared by all loops, default a fresh one): once set,
    connections close after their current request. [fixed_services]: the
    connections' pipelines are given them instead of looking up the services in
    force once per connection (the direct-calls baseline of the benchmarks);
    they must be the services in force around the loop's connections, which
    their handlers' own service calls get. [received] counts the bytes each
    socket read returns, [handshaken] the TLS handshakes (the metrics).
    [ended peer] is called (in a fiber of the loop) when a connection given to
    {!serve} ends. *)

val idle : context -> int
(** Connections of the context waiting for a request, as of the sweeper's last
    look (at most a tick old). Any domain. *)

val drain : context -> unit
(** [drain c] sets the context's draining flag: every connection of [c] closes
    after its current request (answered with [Connection: close]). One waiting
    for a request may still read one, which its client may have sent already,
    until {!close_idle}. An upgraded connection ({!Braid_web.Upgraded}) blocked
    in a read is woken with {!Braid_web.Upgraded.Shutdown} (with no [interrupt],
    it is cancelled), and its later reads raise it. The idle workers (see
    {!serve}) stop waiting: their fibers end. *)

val close_idle : context -> unit
(** [close_idle c] closes the connections of [c] waiting for a request (their
    fibers are cancelled and return normally; a parked one is closed by the
    fiber that takes it when it is woken: one whose connection parked or ended,
    or one {!unpark} gives it), except one whose request has come (a parked one
    woken by it, or one with bytes waiting), which reads that request: the end
    of the grace {!drain} gives them. *)

val evict_idle : context -> now:int -> idle_for:int -> bool
(** [evict_idle c ~now ~idle_for] closes one connection of [c] that has waited
    for a request for [idle_for] nanoseconds at least at [now] (monotonic
    nanoseconds, the services' clock), if one has, and says whether it did
    ("reusable", in nginx's words): the one that has waited longest among those
    that have never sent a request (silent clients, or clients stalled in their
    TLS handshake); a keep-alive connection that has made requests only while no
    such connection waits at all, however briefly. Never one in a request, one
    that finished its response less than [idle_for] ago, or one whose next
    request has come (woken by it, or with bytes waiting to be read). It is
    closed soon after (by its fiber; if parked, by the fiber that takes it when
    it is woken, see {!close_idle}), never within this call. Makes one [recv] (a
    peek) per candidate. *)

val sweep : context -> unit
(** [sweep c] never returns: it cancels the connections of [c] idle past their
    deadline or stuck in a write past their send timeout (their fibers return
    normally; parked ones are closed as by {!evict_idle}), looking at least
    eight times per shortest timeout of the configurations it has seen (and at
    least every second), on the services' clock, so no connection needs a timer
    or a fiber of its own. Marlow's "timeout manager". An idle connection with
    bytes waiting to be read is never closed: after a pause of the process (a
    stopped process, a paused virtual machine, starvation) its request arrived
    in time, and its fiber only has not been woken yet.
    @raise Braid.Cancelled when its fiber is cancelled. *)

val serve_stream :
  context ->
  Config.t ->
  ?pending:(unit -> bool) ->
  ?await_input:(unit -> unit) ->
  ?interrupt:(exn -> unit) ->
  peer:Unix.sockaddr option ->
  read:(bytes -> int -> int -> int) ->
  write:(bytes -> int -> int -> unit) ->
  unit ->
  Pipeline.outcome
(** [serve_stream c config ~peer ~read ~write] serves one connection over [read]
    and [write] (see {!Pipeline.transport}), registered in [c]: the sweeper and
    {!drain} may end it ([Peer_closed]). With [interrupt] (which wakes a fiber
    blocked in [await_input] or in [read] with the exception given), the sweeper
    parks a connection idle for a tick: it waits in [await_input] again outside
    its handlers (see {!Pipeline.Parked}), in the same fiber.
    @raise Braid.Cancelled if the fiber is cancelled from elsewhere. *)

val parked : context -> int
(** Connections waiting for a request outside their handlers. *)

val buffers_held : context -> int
(** Input and output buffers taken from the loop's pools and not given back:
    held by connections reading or writing a request (or dropped with their
    connection). *)

val close_quietly : Braid_io.Net.socket -> unit
(** [close_quietly socket] closes [socket], ignoring an error: a failed close(2)
    still releases the descriptor (Linux), and the connection is over either
    way. *)

val serve : context -> Config.t -> Braid_io.Net.socket -> Unix.sockaddr -> unit
(** [serve context config socket peer] serves [socket], which it owns from now:
    it closes it when the connection ends, and then calls the context's
    [ended peer]. Sets [TCP_NODELAY] (responses are written whole; Nagle's
    algorithm would only delay the last segment). When the server ends the
    connection, it lingers ({!Config.linger}) first. Socket errors (a reset, a
    broken pipe) end the connection and are logged at [Debug]. A connection
    ended by a timeout ends normally.

    A connection parks when, idle with nothing to read, the sweeper finds it
    waiting for two looks, or at once when 32 connections of the loop or more
    wait in their fibers: it waits for its next request with no fiber (its
    socket watched by the loop, {!Braid_io.Fd.watch_input}), and input gets it a
    fiber again. An idle connection so costs its socket's registration and a few
    hundred bytes. A fresh connection is first looked at (a [recv] with
    [MSG_PEEK]): one whose request is not there yet waits, and parks, like an
    idle one.

    Call it from a fiber of the context's loop, inside the services that are to
    answer the connection ({!Braid_web.Services.run}: a listener's, such as the
    HTTPS redirect's): they are looked up once, here (unless the context has
    fixed ones), and the connection keeps them. Its handlers perform their
    service calls in those services wherever it goes on after parking: in a
    fiber with other services in force, they are installed around it.

    [serve] returns once the connection has ended or parked and no parked
    connection of the context woken by input waits for a fiber: the calling
    fiber serves those in turn meanwhile (fibers, their handlers and stacks are
    reused rather than made for each). Then, while fewer than four fibers do and
    the server is not draining, it waits as an {e idle worker} for the next
    connection woken, and serves it ({!drain} ends the wait). So it may run
    long, for other connections, and a failure it raises may be another
    connection's (each is closed before its failure is raised).
    @raise Braid.Cancelled
      if the fiber is cancelled (its connection closed, or the connections'
      switch cancelled while it waits as an idle worker). *)

val unpark : context -> spawn:((unit -> unit) -> unit) -> unit
(** [unpark context ~spawn] gives each woken parked connection of [context] that
    no fiber has taken (see {!serve}: neither the fiber of a connection that has
    just parked nor an idle worker) a fiber, made by [spawn] (a fork on the
    connections' switch), one at a time: it yields after each, so that running
    fibers take the others first. A fresh or parked TLS connection
    ({!serve_tls}) woken by input is given a fiber the same way. It returns once
    {!drain} has been called (it wakes it), no connection is parked and none
    waits for a fiber; there must be one running per context that {!serve} or
    {!serve_tls} is given connections of.
    @raise Braid.Cancelled when its fiber is cancelled. *)

val close_parked : context -> unit
(** [close_parked context] closes the parked connections of [context] (fresh TLS
    ones waiting for their first bytes included), with no fiber running them:
    for the end of a loop, once [unpark] has stopped. *)

val serve_tls :
  context ->
  Config.t ->
  Braid_tls.Server_context.t ->
  Braid_io.Net.socket ->
  Unix.sockaddr ->
  unit
(** [serve_tls context config tls socket peer] is {!serve} over TLS with the
    certificates of [tls]; it owns [socket] as {!serve} does (closes it, then
    calls the context's [ended peer]). Call it from a fiber of the context's
    loop.

    A connection with nothing to read yet waits for its first bytes with no
    fiber and no TLS state (its socket watched, as a parked plain connection
    waits): a silent client costs about 1.4 KB. Its first bytes get it a fiber
    ({!unpark} makes it), which creates the TLS state; the handshake runs as the
    connection waits for its first request, and counts as part of it: from the
    accept, it must finish within [config.timeouts.request_header], and a
    connection still silent or in its handshake can be closed to admit others
    ({!evict_idle}) or at the end of a drain ({!close_idle}). Between requests
    it parks as {!serve}'s connections do (the sweeper seeing it idle twice, or
    at once when 32 connections or more wait in their fibers), keeping its TLS
    state; input gets it a fiber from {!unpark}. One in the middle of its
    handshake waits in its fiber until the sweeper parks it.

    A failed handshake (bytes sent, then a failure, a timeout, an eviction or
    the client gone before it finished) is logged at [Debug] and counted
    [Failed]; a client that never sent a byte began none, and is not counted. A
    client whose first byte is a letter (plain HTTP: never a TLS record's first
    byte) is answered [400 Bad Request] in plain text ("plain HTTP request sent
    to the HTTPS port"), then the connection lingers and closes; counted
    [Failed]. Files are read and written instead of sent with sendfile, and the
    connection ends with a close_notify alert. The TLS state is freed when the
    connection ends.

    [serve_tls] returns once the connection has ended or waits with no fiber.
    @raise Braid.Cancelled if the fiber is cancelled. *)
