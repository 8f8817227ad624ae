(* A server with three routes on one event loop: /fast answers at once,
   /slow-direct runs a slow SQLite query by calling the sqlite3 binding in the
   handler (on the loop's thread), /slow-pool runs the same query through a
   Braid_sqlite pool (on its Blocking threads). A client thread starts a slow
   request, waits a little, then times a request for /fast: the latency of a
   request that has nothing to do with the database. *)

open Braid_web

let rows = try int_of_string Sys.argv.(1) with _ -> 20_000_000

let slow_sql =
  Printf.sprintf
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < \
     %d) SELECT count(*) FROM c"
    rows

let path = Filename.temp_file "braid-slow-query" ".db"

let direct _ =
  let db = Sqlite3.db_open path in
  let result = ref "" in
  let _rc =
    Sqlite3.exec_no_headers db slow_sql ~cb:(fun row ->
        result := Option.value row.(0) ~default:"")
  in
  ignore (Sqlite3.db_close db);
  Response.string (!result ^ "\n")

let pool = Braid_sync.Promise.create ()

let pooled _ =
  match
    Braid_sqlite.use (Braid_sync.Promise.await pool) (fun c ->
        Braid_sqlite.query c slow_sql)
  with
  | Ok [ [| Braid_db.Value.Int n |] ] -> Response.string (string_of_int n ^ "\n")
  | Ok _ -> Response.string ~status:500 "unexpected rows\n"
  | Error e -> Response.string ~status:500 (Braid_db.Error.to_string e ^ "\n")

let app =
  Router.(
    empty
    |> get "/fast" (fun _ -> Response.string "fast\n")
    |> get "/slow-direct" direct |> get "/slow-pool" pooled)

(* A blocking HTTP/1.1 client: sends GET [target], returns a function that
   reads the whole response (the server closes after it). *)
let request port target =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  let req =
    Printf.sprintf "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
      target
  in
  ignore (Unix.write_substring s req 0 (String.length req));
  fun () ->
    let buf = Bytes.create 4096 and got = Buffer.create 256 in
    let rec loop () =
      match Unix.read s buf 0 4096 with
      | 0 -> ()
      | n ->
          Buffer.add_subbytes got buf 0 n;
          loop ()
    in
    loop ();
    Unix.close s;
    Buffer.contents got

let now () = Unix.gettimeofday ()

let measure port slow_route =
  let slow_started = now () in
  let slow = request port slow_route in
  Thread.delay 0.1;
  let fast_started = now () in
  let fast = request port "/fast" in
  ignore (fast ());
  let fast_ms = (now () -. fast_started) *. 1000. in
  ignore (slow ());
  let slow_ms = (now () -. slow_started) *. 1000. in
  Printf.printf
    "%-12s  slow query %8.0f ms   unrelated /fast request %8.1f ms\n%!"
    slow_route slow_ms fast_ms

let client port =
  Printf.printf "slow query: count to %d in a recursive CTE, one event loop\n%!"
    rows;
  for _ = 1 to 3 do
    measure port "/slow-direct";
    measure port "/slow-pool"
  done;
  Unix.kill (Unix.getpid ()) Sys.sigterm

let () =
  let config =
    {
      Braid_server.Config.default with
      listen = ADDR_INET (Unix.inet_addr_loopback, 0);
    }
  in
  let background () =
    Braid_io.Switch.run @@ fun sw ->
    Braid_sync.Promise.fill pool
      (Braid_sqlite.pool ~sw ~max_size:2 (Braid_sqlite.config path));
    (* Until the server cancels its background fibers at shutdown. *)
    Braid_io.Time.sleep Float.infinity
  in
  let on_listen = function
    | Unix.ADDR_INET (_, port) -> ignore (Thread.create client port)
    | ADDR_UNIX _ -> assert false
  in
  let outcome =
    Braid_server.Server.serve ~config ~log_level:Log_event.Warning ~background
      ~on_listen app
  in
  Sys.remove path;
  match outcome with Ok () -> () | Error m -> prerr_endline m
