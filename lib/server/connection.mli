(** One accepted connection: socket options, the pipeline chosen by mode, and a
    graceful close.

    Runs in the connection's own fiber (see {!Server}), blocking only it. *)

type mode =
  | Effects
      (** The pipeline performs effects ({!Services.Perform}) answered by the
          production handlers ({!Services.run}): the server as shipped. *)
  | Direct_calls
      (** The same pipeline calling {!Production} directly: the baseline of the
          reverse-post benchmark. *)

type context
(** What the connections of one event loop share: the mode, the production
    services and the [Date] cache. Confined to that loop's domain. *)

val context : ?draining:bool Atomic.t -> mode -> Production.t -> context
(** [context ~draining mode production] is the context of one loop. [draining]
    is the server's "shutting down" flag (shared by all loops, default a fresh
    one): once set, connections close after their current request. *)

val production : context -> Production.t

val drain : context -> unit
(** [drain c] sets the context's draining flag and closes at once the
    connections of [c] that are idle (waiting for a request: their fibers are
    cancelled and return normally); the others close after their current request
    ({!Pipeline.S.serve}). Call it from a fiber of the context's loop. *)

val sweep : context -> unit
(** [sweep c] never returns: run in a fiber of [c]'s loop, it cancels the
    connections of [c] idle past their deadline (their fibers return normally),
    looking at least eight times per shortest idle timeout of the configurations
    it has seen (and at least every second), so no connection needs a timer or a
    fiber of its own. Marlow's "timeout manager".
    @raise Braid.Cancelled when its fiber is cancelled. *)

val serve : context -> Config.t -> Braid_io.Net.socket -> Unix.sockaddr -> unit
(** [serve context config socket peer] serves [socket] until the peer or the
    server ends the connection. Sets [TCP_NODELAY] (responses are written whole;
    Nagle's algorithm would only delay the last segment). When the server ends
    it, it lingers ({!Config.linger}) before returning. Socket errors (a reset,
    a broken pipe) end the connection and are logged at [Debug]; the socket is
    closed by its owner (the accept switch). The timeouts of [config] apply:
    idle deadlines only if a fiber runs {!sweep} for [context], the others with
    {!Braid_io.Time.timeout}; a connection ended by a timeout returns normally.
    @raise Braid.Cancelled if the fiber is cancelled. *)
