(** PostgreSQL on Braid's event loop: libpq in non-blocking mode, its socket
    waited for by {!Braid_io}'s loop, so a query blocks only its fiber and costs
    no thread.

    {[
      let world_by_id =
        Braid_db.Statement.make
          "SELECT id, randomnumber FROM world WHERE id = $1"

      let main () =
        Braid_io.run @@ fun () ->
        Braid_io.Switch.run @@ fun sw ->
        let db =
          pool ~sw ~max_size:8 (config "host=/run/postgresql dbname=hello")
        in
        match use db (fun c -> query_prepared c world_by_id [| Int 42 |]) with
        | Ok [ [| Int id; Int n |] ] -> Printf.printf "world %d: %d\n" id n
        | Ok _ -> print_endline "no such world"
        | Error e -> prerr_endline (Braid_db.Error.to_string e)
    ]}

    {b Waiting.} A connection is opened with [PQconnectStart] and
    [PQconnectPoll]; a statement is sent with [PQsendQueryParams] (or
    [PQsendPrepare] and [PQsendQueryPrepared]), flushed, and its results read
    with [PQconsumeInput], [PQisBusy] and [PQgetResult]. Whenever libpq would
    block, the fiber waits on a duplicate of libpq's socket made an
    {!Braid_io.Fd.t} (the loop owns the duplicate and closes it; libpq keeps and
    closes its own). Only [PQconnectStart] runs on the {!Braid_io.Blocking}
    pool, because it resolves a host name with the blocking [getaddrinfo].

    {b Loops.} That duplicate is registered with the loop of the fiber that
    opened the connection, so a connection is used from that loop only; a pool
    keeps connections per loop and lends each caller one of its own loop (see
    {!Braid_db.S.val-pool}).

    {b Cancellation.} A fiber cancelled during a statement (its switch, or a
    {!Braid_io.Time.timeout}) asks the server to cancel it, then reads the
    statement's results to their end (the server answers "canceling statement
    due to user request"), protected from cancellation, so the connection is
    clean and a pool gives it back; then {!Braid.Cancelled} is raised. The
    request is [SELECT pg_cancel_backend(pid)] on a short second connection
    opened on the loop, not libpq's [PQcancel]: the binding sends that only
    while another thread is inside a call on the connection (it was made for
    blocking use), and [PQcancel] would block the loop on a connection of its
    own. So cancelling costs a connection's start-up, and the server must accept
    one more connection of the same role. If the request and the draining take
    longer than the config's [cancel_timeout], the connection is marked broken
    instead and a pool closes it.

    {b A server that stops} (a restart, [pg_ctl stop -m immediate], a crash, a
    lost network) makes the statement in flight return
    [Error (Connection_lost _)], and marks the connection broken; a pool closes
    it and opens a new one for the next caller. An idle pooled connection is
    checked with one [recv] (no round trip) before reuse: a server that closed
    it is noticed there.

    {b Types.} Parameters are sent as text (or binary for
    {!Braid_db.Value.Blob}) with no declared type: the server infers each from
    the statement, so write a cast where it cannot ([SELECT $1::int]). Columns
    come back by type: [bool] as [Bool]; [int2], [int4], [int8] and [oid] as
    [Int] (an [int8] beyond 63 bits as [Text]); [float4] and [float8] as
    [Float]; [bytea] as [Blob]; [NULL] as [Null]; every other type as [Text], in
    PostgreSQL's notation.

    {b Limits.} Over TLS ([sslmode=require]), bytes OpenSSL has read but not yet
    handed to libpq are invisible to the loop; this driver was tested over
    Unix-domain sockets and plain TCP. [COPY] and [LISTEN] notifications are not
    supported. *)

type config
(** A connection string and the driver's settings. *)

val config : ?connect_timeout:float -> ?cancel_timeout:float -> string -> config
(** [config conninfo] connects with libpq's connection string [conninfo]
    (["host=/tmp port=5432 dbname=app user=app"], or a [postgresql://] URI).
    Opening a connection gives up after [connect_timeout] seconds (default 10.);
    cancelling a statement after [cancel_timeout] seconds (default 5., see
    above). Pure. *)

include Braid_db.S with type config := config
(** The connection functions, transactions and the pool: see {!Braid_db.DRIVER}
    and {!Braid_db.S}. [exec] and [query] without parameters use the simple
    query protocol (several statements allowed); with parameters, the extended
    one (one statement). *)

val backend_pid : connection -> int
(** [backend_pid c] is the process id of [c]'s server process: two calls on one
    connection agree, two connections differ. Never blocks. *)
