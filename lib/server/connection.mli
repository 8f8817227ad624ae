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

val context : mode -> Production.t -> context
val production : context -> Production.t

val serve : context -> Config.t -> Braid_io.Net.socket -> Unix.sockaddr -> unit
(** [serve context config socket peer] serves [socket] until the peer or the
    server ends the connection. Sets [TCP_NODELAY] (responses are written whole;
    Nagle's algorithm would only delay the last segment). When the server ends
    it, it lingers ({!Config.linger}) before returning. Socket errors (a reset,
    a broken pipe) end the connection and are logged at [Debug]; the socket is
    closed by its owner (the accept switch).
    @raise Braid.Cancelled if the fiber is cancelled. *)
