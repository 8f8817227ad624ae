(* braid_postgres against a real PostgreSQL 15, started once for the suite. *)

open Braid_db
module Pg = Braid_postgres
module Time = Braid_io.Time
module Promise = Braid_sync.Promise

let server = lazy (Pg_server.start ())
let config () = Pg.config (Pg_server.conninfo (Lazy.force server))
let value = Alcotest.testable Value.pp Value.equal
let row = Alcotest.array value
let error = Alcotest.testable Error.pp ( = )

let ok = function
  | Ok v -> v
  | Error e -> Alcotest.failf "unexpected error: %s" (Error.to_string e)

(* Each test runs in a loop of its own, with a pool on a switch of its own. *)
let with_pool ?max_size ?wait_timeout f =
  Braid_io.run @@ fun () ->
  Braid_io.Switch.run @@ fun sw ->
  f (Pg.pool ~sw ?max_size ?wait_timeout (config ()))

(* Polls [cond] every 5 ms for at most 10 s, sleeping in between (the loop
   waits in epoll meanwhile): a condition that never comes fails the test
   with [what] instead of hanging it. *)
let wait_until what cond =
  let deadline = Unix.gettimeofday () +. 10. in
  while not (cond ()) do
    if Unix.gettimeofday () > deadline then
      Alcotest.failf "after 10 s, still not: %s" what;
    Time.sleep 0.005
  done

let query pool ?params sql = Pg.use pool (fun c -> Pg.query c ?params sql)
let pid pool = ok (Pg.use pool (fun c -> Ok (Pg.backend_pid c)))

let test_types () =
  with_pool @@ fun pool ->
  let params =
    Value.
      [|
        Int 42;
        Int (-7);
        Float 1.5;
        Text "héllo";
        Bool true;
        Blob "a\000b\255";
        Null;
      |]
  in
  let rows =
    ok
      (query pool ~params
         "SELECT $1::int4, $2::int8, $3::float8, $4::text, $5::bool, \
          $6::bytea, $7::int, 'x'::varchar, 2.50::numeric, 'NaN'::float8")
  in
  Alcotest.(check (list row))
    "each type decoded"
    [
      Value.
        [|
          Int 42;
          Int (-7);
          Float 1.5;
          Text "héllo";
          Bool true;
          Blob "a\000b\255";
          Null;
          Text "x";
          Text "2.50";
          Float Float.nan;
        |];
    ]
    rows;
  Alcotest.(check (list row))
    "no rows" []
    (ok (query pool "SELECT 1 WHERE false"));
  (match query pool ~params:[| Text "a\000b" |] "SELECT $1::text" with
  | Error (Sql { code = "22021"; _ }) -> ()
  | r ->
      Alcotest.failf "a NUL byte in text: %s"
        (match r with Ok _ -> "Ok" | Error e -> Error.to_string e));
  (match query pool "SELEC 1" with
  | Error (Sql { code = "42601"; _ }) -> ()
  | _ -> Alcotest.fail "a syntax error is Sql 42601");
  Alcotest.(check (list row))
    "the connection is usable after an error" [ [| Int 1 |] ]
    (ok (query pool "SELECT 1"))

let test_prepared () =
  with_pool @@ fun pool ->
  let insert = Statement.make "INSERT INTO prepared_t VALUES ($1, $2)" in
  let select = Statement.make "SELECT v FROM prepared_t WHERE k = $1" in
  let broken = Statement.make "SELEC $1" in
  ok
    (Pg.use pool (fun c ->
         let ( let* ) = Result.bind in
         let* _ = Pg.exec c "CREATE TEMP TABLE prepared_t (k int, v text)" in
         let* n = Pg.exec_prepared c insert [| Int 1; Text "one" |] in
         Alcotest.(check int) "one row inserted" 1 n;
         let* _ = Pg.exec_prepared c insert [| Int 2; Text "two" |] in
         (match Pg.query_prepared c broken [| Int 1 |] with
         | Error (Sql { code = "42601"; _ }) -> ()
         | _ -> Alcotest.fail "a statement that does not prepare is an error");
         let* rows = Pg.query_prepared c select [| Int 2 |] in
         Alcotest.(check (list row)) "second row" [ [| Text "two" |] ] rows;
         let* rows = Pg.query_prepared c select [| Int 1 |] in
         Alcotest.(check (list row)) "first row" [ [| Text "one" |] ] rows;
         let* rows =
           Pg.query c "SELECT name FROM pg_prepared_statements ORDER BY name"
         in
         Alcotest.(check (list row))
           "each statement prepared once on the connection"
           [
             [| Text (Statement.name insert) |];
             [| Text (Statement.name select) |];
           ]
           (List.sort compare rows);
         Ok ()))

let test_transactions () =
  with_pool ~max_size:1 @@ fun pool ->
  let count () =
    match ok (query pool "SELECT count(*)::int FROM tx_t") with
    | [ [| Int n |] ] -> n
    | _ -> Alcotest.fail "count"
  in
  let insert c = Pg.exec c ~params:[| Int 1 |] "INSERT INTO tx_t VALUES ($1)" in
  ignore (ok (query pool "CREATE TEMP TABLE tx_t (k int)"));
  ignore (ok (Pg.use pool (fun c -> Pg.with_transaction c insert)));
  Alcotest.(check int) "committed" 1 (count ());
  let refused = Error.Sql { code = "P0001"; message = "no" } in
  Alcotest.(check (result int error))
    "an Error rolls back" (Error refused)
    (Pg.use pool (fun c ->
         Pg.with_transaction c (fun c ->
             ignore (ok (insert c));
             Error refused)));
  Alcotest.(check int) "rolled back on Error" 1 (count ());
  (match
     Pg.use pool (fun c ->
         Pg.with_transaction c (fun c ->
             ignore (ok (insert c));
             failwith "boom"))
   with
  | _ -> Alcotest.fail "the exception is re-raised"
  | exception Failure _ -> ());
  Alcotest.(check int) "rolled back on an exception" 1 (count ());
  (match
     Pg.use pool (fun c ->
         Pg.with_transaction c (fun c ->
             ignore (ok (insert c));
             ignore (Pg.exec c "INSERT INTO no_such_table VALUES (1)");
             Ok ()))
   with
  | Error (Sql { code = "40000"; _ }) -> ()
  | _ -> Alcotest.fail "a COMMIT that rolled back is an error");
  Alcotest.(check int) "nothing committed after a failed statement" 1 (count ())

let test_cancel_by_timeout () =
  with_pool ~max_size:1 @@ fun pool ->
  let before = pid pool in
  (match Time.timeout 0.2 (fun () -> query pool "SELECT pg_sleep(30)") with
  | None -> ()
  | Some _ -> Alcotest.fail "the query outlived its timeout");
  Alcotest.(check int) "the same connection is reused" before (pid pool);
  Alcotest.(check (list row))
    "and usable" [ [| Int 0 |] ]
    (ok
       (query pool
          "SELECT count(*)::int FROM pg_stat_activity WHERE query LIKE 'SELECT \
           pg_sleep(30)%' AND state = 'active'"));
  (* Cancelled at once: the server process may not have begun the statement
     when the first request comes, and ignores it; the request is repeated. *)
  (match Time.timeout 0.001 (fun () -> query pool "SELECT pg_sleep(30)") with
  | None -> ()
  | Some _ -> Alcotest.fail "the query outlived its timeout");
  Alcotest.(check int) "reused after an immediate cancel" before (pid pool);
  ignore (ok (query pool "CREATE TEMP TABLE cancelled_t (k int)"));
  let cancelled_in_transaction =
    Time.timeout 0.2 (fun () ->
        Pg.use pool (fun c ->
            Pg.with_transaction c (fun c ->
                ignore (ok (Pg.exec c "INSERT INTO cancelled_t VALUES (1)"));
                Pg.query c "SELECT pg_sleep(30)")))
  in
  Alcotest.(check bool)
    "cancelled in a transaction" true
    (cancelled_in_transaction = None);
  (* The session would see its own row if the transaction were still open. *)
  Alcotest.(check (list row))
    "the transaction was rolled back" [ [| Int 0 |] ]
    (ok (query pool "SELECT count(*)::int FROM cancelled_t"))

let test_server_killed () =
  let server = Lazy.force server in
  with_pool ~max_size:2 @@ fun pool ->
  let victim = pid pool in
  let in_flight =
    Braid.Fiber.fork (fun () ->
        Time.timeout 20. (fun () -> query pool "SELECT pg_sleep(30)"))
  in
  (* The query is running once the server lists it. *)
  let rec until_running () =
    match
      ok
        (query pool
           (Printf.sprintf
              "SELECT count(*)::int FROM pg_stat_activity WHERE pid = %d AND \
               state = 'active'"
              victim))
    with
    | [ [| Int 1 |] ] -> ()
    | _ ->
        Time.sleep 0.02;
        until_running ()
  in
  until_running ();
  Braid_io.Blocking.run (fun () -> Pg_server.stop_immediately server);
  (match Braid.Fiber.join in_flight with
  | Some (Error (Connection_lost _)) -> ()
  | Some (Ok _) -> Alcotest.fail "the query succeeded"
  | Some (Error e) -> Alcotest.failf "another error: %s" (Error.to_string e)
  | None -> Alcotest.fail "the query hung");
  (match query pool "SELECT 1" with
  | Error (Connect_failed _) -> ()
  | _ -> Alcotest.fail "no server: Connect_failed");
  Braid_io.Blocking.run (fun () -> Pg_server.restart server);
  Alcotest.(check (list row))
    "reconnected" [ [| Int 1 |] ]
    (ok (query pool "SELECT 1"));
  Alcotest.(check bool) "a new server process" true (pid pool <> victim);
  Alcotest.(check int)
    "the broken connections were closed" 1 (Pg.stats pool).open_connections

let test_pool_exhaustion () =
  with_pool ~max_size:2 ~wait_timeout:0.3 @@ fun pool ->
  Braid_io.Switch.run @@ fun sw ->
  let hold release =
    Braid_io.Switch.fork sw (fun () ->
        Pg.use pool (fun c ->
            let r = Pg.query c "SELECT 1" in
            Promise.await release;
            r))
  in
  let release_first = Promise.create ()
  and release_second = Promise.create () in
  let first = hold release_first and second = hold release_second in
  wait_until "two connections open" (fun () ->
      (Pg.stats pool).open_connections >= 2);
  Alcotest.(check (result (list row) error))
    "a third waits and times out" (Error (Wait_timeout 0.3))
    (query pool "SELECT 2");
  let third = Braid_io.Switch.fork sw (fun () -> query pool "SELECT 3") in
  wait_until "a caller waiting" (fun () -> (Pg.stats pool).waiting >= 1);
  Promise.fill release_first ();
  Alcotest.(check (result (list row) error))
    "served once a connection is given back" (Ok [ [| Int 3 |] ])
    (Braid.Fiber.join third);
  Promise.fill release_second ();
  ignore (Braid.Fiber.join first);
  ignore (Braid.Fiber.join second);
  Alcotest.(check int) "never more than two" 2 (Pg.stats pool).open_connections

let test_loop_not_stalled () =
  with_pool @@ fun pool ->
  let ticks = ref 0 and finished = ref false in
  let ticker =
    Braid.Fiber.fork (fun () ->
        while not !finished do
          Time.sleep 0.01;
          incr ticks
        done)
  in
  ignore (ok (query pool "SELECT pg_sleep(0.3)"));
  let ticks_during_query = !ticks in
  finished := true;
  Braid.Fiber.join ticker;
  if ticks_during_query < 2 then
    Alcotest.failf "another fiber ran %d times during a slow query"
      ticks_during_query

(* {1 One pool, several event loops} *)

(* The pool's connections carry a name of their own, so that a separate
   connection can count them in pg_stat_activity. *)
let tagged_config tag =
  Pg.config (Pg_server.conninfo (Lazy.force server) ^ " application_name=" ^ tag)

(* Server processes of connections named [tag], seen from a connection of
   its own (not named), on the calling loop. *)
let connections_named tag =
  Braid_io.Switch.run @@ fun sw ->
  let observer = ok (Pg.connect ~sw (config ())) in
  Fun.protect ~finally:(fun () -> Pg.close observer) @@ fun () ->
  match
    ok
      (Pg.query observer ~params:[| Text tag |]
         "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = \
          $1")
  with
  | [ [| Int n |] ] -> n
  | _ -> Alcotest.fail "count(*) is one row"

(* A closed connection's server process exits soon after, not at once. *)
let until_none_named tag =
  let deadline = Unix.gettimeofday () +. 5. in
  let rec wait () =
    match connections_named tag with
    | 0 -> ()
    | n when Unix.gettimeofday () > deadline ->
        Alcotest.failf "%d connections still open 5 s after closing" n
    | _ ->
        Time.sleep 0.02;
        wait ()
  in
  wait ()

(* [n] fibers of the calling loop use the pool at once, each holding its
   connection a little while: the backend pids they were lent. *)
let pids_of_concurrent_uses pool n =
  let uses =
    List.init n (fun _ ->
        Braid.Fiber.fork (fun () ->
            ok
              (Pg.use pool (fun c ->
                   Result.map
                     (fun _ -> Pg.backend_pid c)
                     (Pg.query c "SELECT pg_sleep(0.05)")))))
  in
  List.sort_uniq Int.compare (List.map Braid.Fiber.join uses)

(* Domain 0 makes the pool, both loops use it: queries succeed on each, each
   loop has its own connections (distinct server processes), at most
   [max_size] of them. On main, the second loop's first use raised
   Invalid_argument. *)
let test_two_loops () =
  let shared = Promise.create ()
  and second_done = Promise.create ()
  and counted = Promise.create () in
  let pids =
    Braid_io.run_domains ~domains:2 @@ fun ~domain ->
    if domain = 0 then (
      Braid_io.Switch.run @@ fun sw ->
      let pool = Pg.pool ~sw ~max_size:2 (config ()) in
      Promise.fill shared pool;
      let pids = pids_of_concurrent_uses pool 6 in
      Promise.await second_done;
      Alcotest.(check int)
        "two loops' connections, counted" 4 (Pg.stats pool).open_connections;
      Promise.fill counted ();
      pids)
    else
      let pool = Promise.await shared in
      let pids = pids_of_concurrent_uses pool 6 in
      Promise.fill second_done ();
      (* The loop's end would close its connections. *)
      Promise.await counted;
      pids
  in
  match pids with
  | [ first; second ] ->
      Alcotest.(check int) "the first loop's connections" 2 (List.length first);
      Alcotest.(check int)
        "the second loop's connections" 2 (List.length second);
      Alcotest.(check bool)
        "each loop has its own" true
        (List.for_all (fun p -> not (List.mem p second)) first)
  | _ -> Alcotest.fail "two results"

(* [max_size] bounds each loop: with the second loop's two connections held,
   a third use there waits [wait_timeout] and fails, while the first loop
   still gets one at once; given back, the second loop's waiter is served. *)
let test_bound_per_loop () =
  let shared = Promise.create ()
  and first_checked = Promise.create ()
  and second_done = Promise.create () in
  ignore
  @@ Braid_io.run_domains ~domains:2
  @@ fun ~domain ->
  if domain = 0 then (
    Braid_io.Switch.run @@ fun sw ->
    let pool = Pg.pool ~sw ~max_size:2 ~wait_timeout:0.3 (config ()) in
    Promise.fill shared pool;
    let exhausted = Promise.await first_checked in
    Alcotest.(check (list row))
      "the first loop is served at once" [ [| Int 1 |] ]
      (ok
         (Time.timeout 0.2 (fun () -> query pool "SELECT 1")
         |> Option.value ~default:(Error (Error.Wait_timeout 0.2))));
    Promise.fill exhausted ();
    (* The pool closes with this switch. *)
    Promise.await second_done)
  else
    let pool = Promise.await shared in
    Braid_io.Switch.run @@ fun sw ->
    let release = Promise.create () in
    let holders =
      List.init 2 (fun _ ->
          Braid_io.Switch.fork sw (fun () ->
              Pg.use pool (fun c ->
                  let r = Pg.query c "SELECT 1" in
                  Promise.await release;
                  r)))
    in
    wait_until "two connections open" (fun () ->
        (Pg.stats pool).open_connections >= 2);
    Alcotest.(check (result (list row) error))
      "a third use on this loop times out" (Error (Wait_timeout 0.3))
      (query pool "SELECT 2");
    let first_loop_served = Promise.create () in
    Promise.fill first_checked first_loop_served;
    Promise.await first_loop_served;
    let third = Braid_io.Switch.fork sw (fun () -> query pool "SELECT 3") in
    Promise.fill release ();
    Alcotest.(check (result (list row) error))
      "served once one is given back" (Ok [ [| Int 3 |] ])
      (Braid.Fiber.join third);
    List.iter (fun h -> ignore (Braid.Fiber.join h)) holders;
    Promise.fill second_done ()

(* The pool's switch finishes while both loops have idle connections and the
   second loop does nothing: every connection is closed all the same (counted
   by the server), and [use] is Pool_closed on both loops. On main, the
   second loop's use raised Invalid_argument. *)
let test_release_closes_every_loop () =
  let tag = "braid_release_test" in
  let shared = Promise.create ()
  and second_used = Promise.create ()
  and checked = Promise.create () in
  ignore
  @@ Braid_io.run_domains ~domains:2
  @@ fun ~domain ->
  if domain = 0 then (
    let pool =
      Braid_io.Switch.run @@ fun sw ->
      let pool = Pg.pool ~sw ~max_size:2 (tagged_config tag) in
      Promise.fill shared pool;
      ignore (pids_of_concurrent_uses pool 2);
      Promise.await second_used;
      Alcotest.(check int) "four connections open" 4 (connections_named tag);
      pool
    in
    until_none_named tag;
    Alcotest.(check (result (list row) error))
      "closed, on the first loop" (Error Pool_closed) (query pool "SELECT 1");
    Promise.fill checked pool)
  else
    let pool = Promise.await shared in
    ignore (pids_of_concurrent_uses pool 2);
    Promise.fill second_used ();
    ignore (Promise.await checked);
    Alcotest.(check (result (list row) error))
      "closed, on the second loop" (Error Pool_closed) (query pool "SELECT 1")

(* A loop that ends closes its connections (counted by the server), though
   the pool lives on; the loop did end (the pool's fiber there does not keep
   it running), and the pool still serves its own loop. *)
let test_loop_end_closes () =
  let tag = "braid_loop_end_test" in
  Braid_io.run @@ fun () ->
  Braid_io.Switch.run @@ fun sw ->
  let pool = Pg.pool ~sw ~max_size:2 (tagged_config tag) in
  ignore (pids_of_concurrent_uses pool 2);
  let other =
    Domain.spawn (fun () ->
        Braid_io.run (fun () -> List.length (pids_of_concurrent_uses pool 2)))
  in
  (match
     Time.timeout 10. (fun () ->
         Braid_io.Blocking.run (fun () -> Domain.join other))
   with
  | Some n -> Alcotest.(check int) "the other loop had two" 2 n
  | None -> Alcotest.fail "the other loop did not end within 10 s");
  let deadline = Unix.gettimeofday () +. 5. in
  while connections_named tag > 2 && Unix.gettimeofday () < deadline do
    Time.sleep 0.02
  done;
  Alcotest.(check int) "only this loop's are open" 2 (connections_named tag);
  Alcotest.(check int) "and counted" 2 (Pg.stats pool).open_connections;
  Alcotest.(check (list row))
    "the pool serves on" [ [| Int 1 |] ]
    (ok (query pool "SELECT 1"))

module Session_store_cases =
  Session_cases.Make
    (Braid_postgres)
    (struct
      let with_pool f = with_pool f
    end)

let () =
  Alcotest.run "braid_postgres"
    [
      ( "postgres",
        [
          Alcotest.test_case "parameters and types" `Quick test_types;
          Alcotest.test_case "prepared statements" `Quick test_prepared;
          Alcotest.test_case "transactions" `Quick test_transactions;
          Alcotest.test_case "cancelled by a timeout" `Quick
            test_cancel_by_timeout;
          Alcotest.test_case "pool exhaustion" `Quick test_pool_exhaustion;
          Alcotest.test_case "the loop is not stalled" `Quick
            test_loop_not_stalled;
          Alcotest.test_case "server killed mid-query" `Quick test_server_killed;
        ] );
      ( "several loops",
        [
          Alcotest.test_case "one pool, two loops" `Quick test_two_loops;
          Alcotest.test_case "the bound is per loop" `Quick test_bound_per_loop;
          Alcotest.test_case "release closes every loop's" `Quick
            test_release_closes_every_loop;
          Alcotest.test_case "a loop that ends closes its own" `Quick
            test_loop_end_closes;
        ] );
      ("session store", Session_store_cases.cases);
    ]
