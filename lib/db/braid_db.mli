(** Databases on Braid's event loop: what the drivers share.

    A driver ([braid_postgres], [braid_sqlite]) implements {!DRIVER}: open a
    connection, run statements with parameters, prepared statements. {!Make}
    adds the rest of {!S}, the same for every driver: transactions and a bounded
    pool of connections. An application uses a driver's {!S}:
    {[
      module Db (D : S) = struct
        let world_by_id =
          Statement.make "SELECT randomnumber FROM world WHERE id = $1"

        let random_number pool id =
          D.use pool (fun c -> D.query_prepared c world_by_id [| Int id |])
          |> Result.map (function [ [| Value.Int n |] ] -> Some n | _ -> None)
      end
    ]}

    {b Loops and fibers.} A connection belongs to the event loop
    ({!Braid_io.run}) of the fiber that opened it and is used from fibers of
    that loop only (a PostgreSQL connection's socket is registered with that
    loop). A pool is one value for every loop: made once, on one loop, its
    {!S.use} works from a fiber of any loop ({!Braid_io.run_domains}, a server's
    [domains]), lending a connection of the caller's loop. Every call blocks
    only the calling fiber, never the loop: that is the point.

    {b Errors} are results ({!Error.t}); exceptions are for cancellation
    ({!Braid.Cancelled}) and misuse ([Invalid_argument]). The same pooled design
    is Dream's [sql_pool] and Caqti's [Caqti_eio.Pool]. *)

module Value = Value
module Error = Error
module Statement = Statement
module Session_store = Session_store

type row = Value.t array
(** A row: its columns in the order of the statement's result. *)

(** What a driver provides. Each function blocks only the calling fiber, from a
    fiber of the loop that opened the connection; one fiber at a time uses a
    connection. *)
module type DRIVER = sig
  type config
  (** Where and how to connect. *)

  type connection

  val connect : sw:Braid.Switch.t -> config -> (connection, Error.t) result
  (** [connect ~sw config] opens a connection whose resources [sw] releases if
      it finishes first. *)

  val close : connection -> unit
  (** [close c] closes [c] now; idempotent. Never raises. *)

  val is_usable : connection -> bool
  (** [is_usable c] is false once [c] broke (it returned
      {!Braid_db.Error.Connection_lost}, or a call was interrupted and could not
      be wound down), or when a cheap check (no round trip) finds the server
      closed it. A pool closes such a connection instead of reusing it. *)

  val query :
    connection -> ?params:Value.t array -> string -> (row list, Error.t) result
  (** [query c ~params sql] runs [sql] with [params] bound to its placeholders
      and returns the rows. If the fiber is cancelled meanwhile, the statement
      is stopped (see each driver) and [query] raises {!Braid.Cancelled}. *)

  val exec :
    connection -> ?params:Value.t array -> string -> (int, Error.t) result
  (** [exec c ~params sql] runs a statement that returns no rows and is the
      number of rows it changed ([0] for DDL). Without [params], [sql] may hold
      several statements separated by [;]. Cancellation as {!query}. *)

  val query_prepared :
    connection -> Statement.t -> Value.t array -> (row list, Error.t) result
  (** [query_prepared c s params] is {!query} with [s], prepared on [c] the
      first time and reused afterwards. *)

  val exec_prepared :
    connection -> Statement.t -> Value.t array -> (int, Error.t) result
  (** [exec_prepared c s params] is {!exec} with [s], prepared as
      {!query_prepared}. *)
end

(** A driver with transactions and a pool. *)
module type S = sig
  include DRIVER

  val with_transaction :
    connection -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result
  (** [with_transaction c f] runs [f c] between [BEGIN] and [COMMIT]. If [f]
      returns [Error], raises, or its fiber is cancelled, the transaction is
      rolled back (in a section protected from cancellation) and the error is
      returned or the exception re-raised. A [COMMIT] that fails (or that the
      database turned into a rollback because a statement of the transaction
      failed) is an [Error]. Transactions do not nest. *)

  type pool

  type stats = {
    open_connections : int;  (** In use and idle. *)
    idle : int;  (** Open and waiting for a caller. *)
    waiting : int;  (** Callers waiting for a connection. *)
  }

  val pool :
    ?sw:Braid.Switch.t ->
    ?max_size:int ->
    ?wait_timeout:float ->
    ?max_idle:float ->
    config ->
    pool
  (** [pool config] is a pool of connections to [config], opened on demand, none
      yet, for the fibers of every event loop. Each loop that uses it has
      connections of its own, at most [max_size] (default 10): a connection
      stays on the loop that opened it, as its socket is registered there. So
      the pool opens at most [max_size] connections per loop that used it (a
      server of 4 domains, [max_size] 8: up to 32); size [max_size] for one
      loop's share of what the database accepts. The bound is per loop rather
      than for the pool because a connection cannot move: with one bound for
      all, a loop's idle connections could make another loop's callers wait for
      nothing. A caller waits at most [wait_timeout] seconds (default 5.) for a
      free connection of its loop. An idle connection is closed rather than
      reused after [max_idle] seconds (default 300.).

      Without [sw], from anywhere (before a server starts, say); never blocks.
      Each loop's connections are then opened on the switch of a
      {!Braid_io.fork_daemon} fiber the pool starts on that loop with its first
      [use] there, which keeps them until that loop ends; the pool itself is
      never closed. With [sw], from a fiber of an event loop ({!Braid_io.run}),
      one that lives as long as the pool must: the calling loop's connections
      are opened on [sw], the other loops' as above, and the pool closes with
      [sw].

      {b Closing.} When [sw] finishes, [use] returns [Error Pool_closed] on
      every loop from then on. The idle connections of [sw]'s loop are closed
      then, and its connections in use when given back. Each other loop is woken
      (it needs no activity of its own) and at its next turn closes its idle
      connections, its connections in use as they are given back; its daemon
      ends once all are closed. A loop that ends first closes its connections
      when its last other fiber has finished ({!Braid_io.run} then waits for
      it).

      Raises [Invalid_argument] if [max_size < 1], a duration is negative or
      NaN, or [sw] is given and the caller is no fiber of {!Braid_io.run}. *)

  val use : pool -> (connection -> ('a, Error.t) result) -> ('a, Error.t) result
  (** [use pool f] lends [f] a connection of the calling fiber's loop and takes
      it back when [f] returns or raises. The connection is an idle one of this
      loop, else a new one if fewer than [max_size] of this loop are open; else
      [use] waits (this fiber only) for one of this loop to be given back, at
      most [wait_timeout], then returns {!Braid_db.Error.Wait_timeout}. An idle
      connection the server closed (a restart) is discarded and a new one
      opened: after a restart, [use] reconnects by itself.
      [Error (Connect_failed _)] if the server cannot be reached,
      [Error Pool_closed] once the pool's switch has finished.

      A connection that broke during [f] ({!Braid_db.DRIVER.is_usable} false) is
      closed, not given back. One whose statement was cancelled and wound down
      cleanly is given back.

      Keep [f] to database work: the connection is held until it returns. Never
      hand the connection to another fiber or keep it after [f].

      From a fiber of any event loop; finding the loop's connections takes no
      lock and allocates nothing (the first [use] on a loop other than the
      pool's starts that loop's daemon, and waits for it to start).

      Raises [Invalid_argument] outside a fiber of {!Braid_io.run}.
      @raise Braid.Cancelled
        if the fiber is cancelled (the connection is given back or closed as
        above). *)

  val stats : pool -> stats
  (** [stats pool] counts [pool]'s connections and waiters now, summed over the
      loops that use it. Any loop; another loop's counts are read while it runs,
      so with several loops busy the sums are approximate. *)
end

(** [Make (D)] is [D] with {!S.with_transaction} and the pool. *)
module Make (D : DRIVER) :
  S with type config = D.config and type connection = D.connection
