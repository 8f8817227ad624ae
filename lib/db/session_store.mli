(** Sessions in a database table: {!Braid_web.Session}'s server-side store on a
    pool of any driver, so that every instance behind a load balancer sees the
    same sessions, and a log-out ends the session everywhere.

    {[
      module App (D : S) = struct
        module Sessions = Session_store.Make (D)

        (* Once, at start-up: D.use pool Sessions.create_table *)
        let sessions pool = Braid_web.Session.middleware (Sessions.store pool)
      end
    ]}

    [D] is a driver: [Braid_postgres] or [Braid_sqlite].

    The table holds [(key, data, expires)]: [key] is the SHA-256 of the
    session's id (never the id itself: see {!Braid_web.Session.backend}), [data]
    the encoded session, [expires] seconds since the epoch. Expired rows are
    deleted as sessions are saved, at most once a minute per {!Make.store}
    value, by one [DELETE]. The statements are the same for PostgreSQL and
    SQLite ([$1] parameters, [INSERT ... ON CONFLICT ... DO UPDATE]). *)

exception Failed of Error.t
(** What the store raises when the database fails (the handler's request then
    gets a [500], as {!Braid_web.Session.backend} says). *)

(** What the store needs of a driver: any [Braid_db.S] has it. *)
module type DATABASE = sig
  type connection
  type pool

  val use : pool -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result

  val exec :
    connection -> ?params:Value.t array -> string -> (int, Error.t) result

  val query_prepared :
    connection ->
    Statement.t ->
    Value.t array ->
    (Value.t array list, Error.t) result

  val exec_prepared :
    connection -> Statement.t -> Value.t array -> (int, Error.t) result
end

module Make (D : DATABASE) : sig
  val create_table : ?table:string -> D.connection -> (unit, Error.t) result
  (** [create_table c] creates the table (default ["braid_sessions"]) and its
      expiry index if they do not exist. Blocks the calling fiber.

      Raises [Invalid_argument] if [table] is not an SQL identifier
      ([[a-z_][a-z0-9_]*], at most 63 characters). *)

  val store : ?table:string -> D.pool -> Braid_web.Session.store
  (** [store pool] keeps sessions in [table] (default ["braid_sessions"]), which
      {!create_table} made, through [pool]. Each request with a session costs
      one [SELECT] by primary key; a request that changes it one upsert. The
      store's functions are called from handlers' fibers and borrow a connection
      of [pool] for one statement each; they raise {!Failed} when the database
      fails, and {!Braid.Cancelled} when the request's fiber is cancelled.

      Raises [Invalid_argument] as {!create_table}. *)
end
