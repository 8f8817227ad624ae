(* braid_sqlite on temporary database files. *)

open Braid_db
module Sq = Braid_sqlite
module Time = Braid_io.Time
module Promise = Braid_sync.Promise

let value = Alcotest.testable Value.pp Value.equal
let row = Alcotest.array value
let error = Alcotest.testable Error.pp ( = )

let ok = function
  | Ok v -> v
  | Error e -> Alcotest.failf "unexpected error: %s" (Error.to_string e)

(* A fresh database file, a loop and a pool per test. *)
let with_pool ?max_size ?wait_timeout f =
  let path = Filename.temp_file "braid-sqlite" ".db" in
  let config = Sq.config path in
  Fun.protect
    ~finally:(fun () ->
      Sq.shutdown config;
      Sys.remove path)
    (fun () ->
      Braid_io.run @@ fun () ->
      Braid_io.Switch.run @@ fun sw ->
      f (Sq.pool ~sw ?max_size ?wait_timeout config))

let query pool ?params sql = Sq.use pool (fun c -> Sq.query c ?params sql)
let exec pool ?params sql = Sq.use pool (fun c -> Sq.exec c ?params sql)

(* About a second of work for SQLite, whatever the disk. *)
let slow_query =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \
   3000000) SELECT count(*) FROM c"

let test_types () =
  with_pool @@ fun pool ->
  let params =
    Value.[| Int 42; Float 1.5; Text "héllo"; Bool true; Blob "a\000b"; Null |]
  in
  Alcotest.(check (list row))
    "each type round-trips"
    Value.[ [| Int 42; Float 1.5; Text "héllo"; Int 1; Blob "a\000b"; Null |] ]
    (ok (query pool ~params "SELECT ?, ?, ?, ?, ?, ?"));
  (match query pool "SELEC 1" with
  | Error (Sql { code = "ERROR"; _ }) -> ()
  | _ -> Alcotest.fail "a syntax error is Sql ERROR");
  ignore
    (ok
       (exec pool
          "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t \
           VALUES (1, 'one')"));
  (match
     exec pool ~params:[| Int 1; Text "again" |] "INSERT INTO t VALUES (?, ?)"
   with
  | Error (Sql { code = "CONSTRAINT"; _ }) -> ()
  | _ -> Alcotest.fail "a duplicate key is Sql CONSTRAINT");
  Alcotest.(check (list row))
    "usable after errors" [ [| Text "one" |] ]
    (ok (query pool "SELECT v FROM t"))

let test_prepared () =
  with_pool @@ fun pool ->
  let insert = Statement.make "INSERT INTO t VALUES (?1, ?2)" in
  let select = Statement.make "SELECT v FROM t WHERE k = ?" in
  ignore (ok (exec pool "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)"));
  for k = 1 to 3 do
    Alcotest.(check int)
      "one row inserted" 1
      (ok
         (Sq.use pool (fun c ->
              Sq.exec_prepared c insert [| Int k; Text (string_of_int k) |])))
  done;
  (match
     Sq.use pool (fun c -> Sq.exec_prepared c insert [| Int 1; Text "x" |])
   with
  | Error (Sql { code = "CONSTRAINT"; _ }) -> ()
  | _ -> Alcotest.fail "a failed run is an error");
  Alcotest.(check (list row))
    "reused after a failed run" [ [| Text "2" |] ]
    (ok (Sq.use pool (fun c -> Sq.query_prepared c select [| Int 2 |])));
  match
    Sq.use pool (fun c -> Sq.query_prepared c (Statement.make "SELEC") [||])
  with
  | Error (Sql _) -> ()
  | _ -> Alcotest.fail "a statement that does not prepare is an error"

let test_transactions () =
  with_pool @@ fun pool ->
  let count () =
    match ok (query pool "SELECT count(*) FROM t") with
    | [ [| Int n |] ] -> n
    | _ -> Alcotest.fail "count"
  in
  let insert c = Sq.exec c ~params:[| Int 1 |] "INSERT INTO t VALUES (?)" in
  ignore (ok (exec pool "CREATE TABLE t (k INTEGER)"));
  ignore (ok (Sq.use pool (fun c -> Sq.with_transaction c insert)));
  Alcotest.(check int) "committed" 1 (count ());
  let refused = Error.Sql { code = "app"; message = "no" } in
  Alcotest.(check (result int error))
    "an Error rolls back" (Error refused)
    (Sq.use pool (fun c ->
         Sq.with_transaction c (fun c ->
             ignore (ok (insert c));
             Error refused)));
  Alcotest.(check int) "rolled back on Error" 1 (count ());
  (match
     Sq.use pool (fun c ->
         Sq.with_transaction c (fun c ->
             ignore (ok (insert c));
             failwith "boom"))
   with
  | _ -> Alcotest.fail "the exception is re-raised"
  | exception Failure _ -> ());
  Alcotest.(check int) "rolled back on an exception" 1 (count ())

let test_slow_query_does_not_stall () =
  with_pool @@ fun pool ->
  let ticks = ref 0 and finished = ref false in
  let ticker =
    Braid.Fiber.fork (fun () ->
        while not !finished do
          Time.sleep 0.005;
          incr ticks
        done)
  in
  Alcotest.(check (list row))
    "the slow query's result" [ [| Int 3000000 |] ]
    (ok (query pool slow_query));
  let ticks_during_query = !ticks in
  finished := true;
  Braid.Fiber.join ticker;
  if ticks_during_query < 2 then
    Alcotest.failf "another fiber ran %d times during a slow query"
      ticks_during_query

let test_cancelled () =
  with_pool ~max_size:1 @@ fun pool ->
  ignore (ok (query pool "SELECT 1"));
  (match Time.timeout 0.05 (fun () -> query pool slow_query) with
  | None -> ()
  | Some _ -> Alcotest.fail "the query outlived its timeout");
  Alcotest.(check int)
    "the interrupted connection is not kept" 0 (Sq.stats pool).open_connections;
  Alcotest.(check (list row))
    "a new connection serves the next query" [ [| Int 2 |] ]
    (ok (query pool "SELECT 2"))

let test_pool_exhaustion () =
  with_pool ~max_size:1 ~wait_timeout:0.1 @@ fun pool ->
  let release = Promise.create () in
  let holder =
    Braid.Fiber.fork (fun () ->
        Sq.use pool (fun c ->
            let r = Sq.query c "SELECT 1" in
            Promise.await release;
            r))
  in
  let deadline = Unix.gettimeofday () +. 10. in
  while (Sq.stats pool).open_connections < 1 do
    if Unix.gettimeofday () > deadline then
      Alcotest.fail "after 10 s, still no connection open";
    Time.sleep 0.005
  done;
  Alcotest.(check (result (list row) error))
    "the second caller times out" (Error (Wait_timeout 0.1))
    (query pool "SELECT 2");
  Promise.fill release ();
  ignore (ok (Braid.Fiber.join holder));
  Alcotest.(check (list row))
    "served once given back" [ [| Int 3 |] ]
    (ok (query pool "SELECT 3"))

(* A pool made outside any loop (before a server starts) serves each loop
   that uses it, and each loop closes its connections when it ends. *)
let test_without_switch () =
  let path = Filename.temp_file "braid-sqlite" ".db" in
  let config = Sq.config path in
  Fun.protect ~finally:(fun () ->
      Sq.shutdown config;
      Sys.remove path)
  @@ fun () ->
  let pool = Sq.pool ~max_size:2 config in
  let in_a_loop () =
    Braid_io.run (fun () ->
        let rows = ok (query pool "SELECT 1") in
        (rows, (Sq.stats pool).open_connections))
  in
  Alcotest.(check (pair (list row) int))
    "a first loop" ([ [| Int 1 |] ], 1) (in_a_loop ());
  Alcotest.(check int)
    "its connection closed when it ended" 0 (Sq.stats pool).open_connections;
  Alcotest.(check (pair (list row) int))
    "a second loop" ([ [| Int 1 |] ], 1) (in_a_loop ());
  Alcotest.(check int) "closed again" 0 (Sq.stats pool).open_connections

(* {1 One pool, several event loops} *)

(* Two connections of the calling loop, lent at the same time (the second
   while the first is held). Returned out of [use] only to compare them. *)
let two_connections pool =
  ok
    (Sq.use pool (fun first ->
         Sq.use pool (fun second ->
             ignore (ok (Sq.query second "SELECT 1"));
             Ok [ first; second ])))

let all_distinct connections =
  let rec go = function
    | [] -> true
    | c :: rest -> (not (List.exists (fun d -> d == c) rest)) && go rest
  in
  go connections

(* One pool on a file, made by domain 0, used by both loops: each writes and
   reads, with connections of its own; the pool's switch finishes while the
   second loop waits, and its connections are closed all the same (the
   counts reach 0), then [use] is Pool_closed on both loops. On main, the
   second loop's first use raised Invalid_argument. *)
let test_two_loops () =
  let path = Filename.temp_file "braid-sqlite" ".db" in
  let config = Sq.config path in
  Fun.protect ~finally:(fun () ->
      Sq.shutdown config;
      Sys.remove path)
  @@ fun () ->
  let shared = Promise.create ()
  and second_used = Promise.create ()
  and closed = Promise.create () in
  let results =
    Braid_io.run_domains ~domains:2 @@ fun ~domain ->
    if domain = 0 then (
      let pool =
        Braid_io.Switch.run @@ fun sw ->
        let pool = Sq.pool ~sw ~max_size:2 config in
        ignore (ok (exec pool "CREATE TABLE t (loop INTEGER)"));
        Promise.fill shared pool;
        ignore (ok (exec pool ~params:[| Int 0 |] "INSERT INTO t VALUES (?)"));
        let mine = two_connections pool in
        let theirs = Promise.await second_used in
        Alcotest.(check bool)
          "four connections, each loop its own" true
          (all_distinct (mine @ theirs));
        Alcotest.(check int) "counted" 4 (Sq.stats pool).open_connections;
        Alcotest.(check (list row))
          "each loop's row"
          [ [| Int 0 |]; [| Int 1 |] ]
          (ok (query pool "SELECT loop FROM t ORDER BY loop"));
        pool
      in
      let deadline = Unix.gettimeofday () +. 5. in
      while
        (Sq.stats pool).open_connections > 0 && Unix.gettimeofday () < deadline
      do
        Time.sleep 0.01
      done;
      Alcotest.(check int)
        "every loop's connection closed" 0 (Sq.stats pool).open_connections;
      Promise.fill closed ();
      query pool "SELECT 1")
    else
      let pool = Promise.await shared in
      ignore (ok (exec pool ~params:[| Int 1 |] "INSERT INTO t VALUES (?)"));
      Promise.fill second_used (two_connections pool);
      Promise.await closed;
      query pool "SELECT 1"
  in
  List.iter
    (fun r ->
      Alcotest.(check (result (list row) error))
        "closed on each loop" (Error Pool_closed) r)
    results

(* A loop that ends closes its share, though the pool lives on (on main, the
   other loop's use raised Invalid_argument). *)
let test_loop_end_closes () =
  with_pool ~max_size:2 @@ fun pool ->
  ignore (two_connections pool);
  let other =
    Domain.spawn (fun () ->
        Braid_io.run (fun () -> List.length (two_connections pool)))
  in
  (match
     Time.timeout 10. (fun () ->
         Braid_io.Blocking.run (fun () -> Domain.join other))
   with
  | Some n -> Alcotest.(check int) "the other loop had two" 2 n
  | None -> Alcotest.fail "the other loop did not end within 10 s");
  Alcotest.(check int)
    "only this loop's are open" 2 (Sq.stats pool).open_connections;
  Alcotest.(check (list row))
    "the pool serves on" [ [| Int 1 |] ]
    (ok (query pool "SELECT 1"))

module Session_store_cases =
  Session_cases.Make
    (Braid_sqlite)
    (struct
      let with_pool f = with_pool f
    end)

let () =
  Alcotest.run "braid_sqlite"
    [
      ( "sqlite",
        [
          Alcotest.test_case "parameters and types" `Quick test_types;
          Alcotest.test_case "prepared statements" `Quick test_prepared;
          Alcotest.test_case "transactions" `Quick test_transactions;
          Alcotest.test_case "a slow query does not stall the loop" `Quick
            test_slow_query_does_not_stall;
          Alcotest.test_case "cancelled by a timeout" `Quick test_cancelled;
          Alcotest.test_case "pool exhaustion" `Quick test_pool_exhaustion;
        ] );
      ( "several loops",
        [
          Alcotest.test_case "one pool, two loops" `Quick test_two_loops;
          Alcotest.test_case "a loop that ends closes its own" `Quick
            test_loop_end_closes;
          Alcotest.test_case "made outside any loop" `Quick test_without_switch;
        ] );
      ("session store", Session_store_cases.cases);
    ]
