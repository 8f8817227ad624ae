(** SQLite on Braid's event loop: every call into SQLite runs on a dedicated
    {!Braid_io.Blocking} pool, so a slow query (or a slow disk) blocks only its
    fiber, never the loop.

    {[
      let count_users pool =
        use pool (fun c -> query c "SELECT count(*) FROM users")
        |> Result.map (function [ [| Braid_db.Value.Int n |] ] -> n | _ -> 0)
    ]}

    {b Threads.} A {!type-config} owns a {!Braid_io.Blocking} pool of its own
    (started with its first call; {!shutdown} ends it), so SQLite's calls never
    queue behind the process's other blocking calls, nor theirs behind a long
    query. A connection is used by one thread at a time: its fiber waits for
    each call to finish before the next. A pool used from several event loops
    keeps connections per loop (see {!Braid_db.S.val-pool}), all running on the
    config's one set of threads: with [threads] fewer than the connections open,
    their calls queue.

    {b Cancellation.} SQLite's binding offers no [sqlite3_interrupt], so a
    statement already running cannot be stopped: a fiber cancelled during a call
    raises {!Braid.Cancelled} at once, the statement runs to its end on its
    thread, and its connection is then closed there, never reused (a pool opens
    another). A call not yet started is dropped.

    {b Types.} [INTEGER] is [Int], [REAL] is [Float], [TEXT] is [Text], [BLOB]
    is [Blob], [NULL] is [Null]; a [Bool] parameter is stored as [1] or [0]
    (SQLite has no boolean). *)

type config
(** A database file and its pool of threads. *)

val config : ?threads:int -> ?busy_timeout:float -> string -> config
(** [config path] opens the database file [path] (created if missing;
    [":memory:"] is a database per connection). Calls run on a new
    {!Braid_io.Blocking} pool of at most [threads] threads (default 4; a pool of
    more connections than threads queues their calls). A connection waits up to
    [busy_timeout] seconds (default 5.) for another's write lock before a
    statement fails with [Sql {code = "BUSY"}]. Never blocks.

    Raises [Invalid_argument] if [threads < 1]. *)

val shutdown : config -> unit
(** [shutdown config] ends [config]'s threads once their calls are done, on a
    thread of its own: never blocks. Calls made afterwards raise
    [Invalid_argument]. *)

include Braid_db.S with type config := config
(** The connection functions, transactions and the pool: see {!Braid_db.DRIVER}
    and {!Braid_db.S}. Each call is one round trip to the pool's thread. *)
