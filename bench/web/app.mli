(** Braid's server for the [web] benchmark, as a user would write it:
    [braid_server] serving a [braid_web] router, one event loop, the defaults of
    {!Braid_server.Config.default} but for the address. *)

val routes : Braid_db_routes.pool Braid_sync.Promise.t -> Braid_web.Router.t
(** [GET /plaintext], [GET /json], the database routes ({!Braid_db_routes.add})
    on the pool the promise is filled with, and a [Server: braid] header on
    every answer (Braid writes [Date] itself). *)

val serve : port:int -> Braid_db_routes.database -> unit
(** Serves {!routes} on 127.0.0.1:[port] until killed, with a pool of [database]
    opened when the server starts, on its one loop. *)
