(** TLS connections: the transport the pipeline reads and writes through (a
    {!Braid_tls.Connection.t}, made when the client's first bytes come), the
    handshake as part of the first request's wait, and the life of a connection
    between its accept and its close, parked with no fiber while silent or idle
    ({!Parking}). In fibers of the loop that owns the registry. Internal. *)

val serve_tls :
  Registry.context ->
  Config.t ->
  Braid_tls.Server_context.t ->
  Braid_io.Net.socket ->
  Unix.sockaddr ->
  unit
(** See {!Connection.serve_tls}. *)

val resume : Registry.context -> Registry.secure -> fiber:Braid.Fiber.t -> unit
(** [resume c s ~fiber] serves the woken connection [s] (silent until now, or
    parked) in [fiber] (the caller's), then other woken TLS connections.
    @raise Braid.Cancelled if the fiber is cancelled. *)
