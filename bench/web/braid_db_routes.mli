(** The four database tests of the [web] benchmark, as Braid serves them, on
    [braid_postgres] (libpq in non-blocking mode on Braid's event loop, a
    bounded pool, prepared statements cached per connection).

    What each route must do to be compared with the peers (bench/peers/web-go
    and bench/peers/web-rust do exactly this):
    - one pool of [database.pool_size] connections (8 in the benchmark) to
      [database.url] ([postgres://postgres@127.0.0.1:PORT/hello_world]), opened
      when the server starts (Braid and Rust open them on demand, Go at once);
      prepared statements where the driver has them;
    - [GET /db]: one row of [SELECT id, randomnumber FROM world WHERE id = $1]
      for a {!random_id}, answered as {!world_json};
    - [GET /queries?queries=N]: {!query_count} such selects, one after the other
      (no pipelining, no batch: the peers do not), answered as a JSON array of
      {!world_json};
    - [GET /updates?queries=N]: as [/queries], then each row given a new
      {!random_id} and written back with
      [UPDATE world SET randomnumber = $2 WHERE id = $1], one statement per row,
      each committed on its own (no transaction: no lock order to get wrong),
      after all the selects; the answer is the rows with their new numbers;
    - [GET /fortunes]: [SELECT id, message FROM fortune], answered with
      {!fortunes_page} (which adds the request-time fortune, sorts and escapes).

    A failed query answers 500 with the error in the body (as the peers); so
    does a row of an unexpected shape. A pool that has no connection free within
    its wait timeout (5 s) answers 500 too: a request never hangs on the
    database.

    {b The pool and the loops.} A [braid_postgres] pool belongs to the event
    loop that made it and is used from fibers of that loop only. Braid's server
    here runs one loop (as the peers run on one core), and [App.serve] opens the
    pool in [Server.run]'s [background] fiber of that loop, and fills the
    promise the handlers await. With several loops ([Config.domains > 1]) this
    is not enough: the handlers of the other loops would use another loop's pool
    ([Invalid_argument]); each loop would need a pool of its own (or pools
    usable across loops, under way). *)

type database = {
  url : string;  (** A libpq connection URI. *)
  pool_size : int;  (** Connections in the pool. *)
}

type pool = Braid_postgres.pool

val open_pool : sw:Braid.Switch.t -> database -> pool
(** [open_pool ~sw database] is a pool of at most [database.pool_size]
    connections to [database.url], opened on demand; from a fiber of the loop
    that serves the routes, which [sw] belongs to. Never blocks. *)

val add : pool Braid_sync.Promise.t -> Braid_web.Router.t -> Braid_web.Router.t
(** [add pool router] is [router] with [GET /db], [/queries], [/updates] and
    [/fortunes], each awaiting [pool] (filled once when the server starts) and
    then using it. [/queries] and [/updates] hold one pool connection for the
    whole request (as the Rust peer), [/db] and [/fortunes] one for their one
    statement. *)

(** {1 What the handlers share with the peers, ready for them} *)

val random_id : unit -> int
(** 1..10,000, uniformly. *)

val query_count : Braid_web.Handler.request -> int
(** TFB's rule for [queries]: its integer value clamped to 1..500; 1 when it is
    missing or not an integer (or the query string is malformed). *)

val world_json : id:int -> random_number:int -> Yojson.Safe.t
(** [{"id":ID,"randomNumber":N}]. *)

val fortunes_page : (int * string) list -> Braid_web.Response.t
(** [fortunes_page rows] is TFB's page for the fortunes read from the database:
    [rows] and ["Additional fortune added at request time."] (id 0), sorted by
    message (bytewise, as the peers), as an HTML table with every message
    escaped ({!Braid_web.Html.escape}); [text/html; charset=utf-8]. *)
