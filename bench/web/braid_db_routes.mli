(** The four database tests of the [web] benchmark, as Braid serves them.

    {b TODO (lead): fill in with [braid_postgres]} (libpq, non-blocking on
    Braid's event loop, with a pool; not on main yet). Until then every route
    answers [501 Not Implemented], which the harness records as "not
    implemented" for Braid instead of failing the run.

    What each route must do to be compared with the peers (bench/peers/web-go
    and bench/peers/web-rust do exactly this):
    - one pool of [database.pool_size] connections (8 in the benchmark) to
      [database.url] ([postgres://postgres@127.0.0.1:PORT/hello_world]), opened
      when the server starts; prepared statements where the driver has them;
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

    A failed query answers 500 (an exception from the handler does that). *)

type database = {
  url : string;  (** A libpq connection URI. *)
  pool_size : int;  (** Connections in the pool. *)
}

val add : database -> Braid_web.Router.t -> Braid_web.Router.t
(** [add database router] is [router] with [GET /db], [/queries], [/updates] and
    [/fortunes]. *)

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
