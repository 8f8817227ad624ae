open Bench_harness
module Procs = Bench_server.Procs
module Wrk = Bench_server.Wrk
module Peers = Bench_server.Peers
module App = App
module Braid_db_routes = Braid_db_routes
module Postgres = Postgres

let role = "braid-web"

(* Connections each server keeps to the database: a few per core of the
   database's one core, enough to keep it busy while others wait on the
   network. The same for the three. *)
let pool_size = 8

(* TFB runs 256 connections for plaintext and JSON and 512 for the database
   tests on many cores; here, half of each for one wrk thread. *)
let connections_plain = 128
let connections_db = 256

(* {1 Braid's server, as a role of this binary} *)

let dispatch () =
  match Sys.getenv_opt "BRAID_BENCH_ROLE" with
  | Some r when r = role ->
      let env name =
        match Sys.getenv_opt name with
        | Some v -> v
        | None -> failwith ("braid-web: " ^ name ^ " is not set")
      in
      App.serve
        ~port:(int_of_string (env "BRAID_BENCH_PORT"))
        {
          url = env "BRAID_BENCH_DATABASE_URL";
          pool_size = int_of_string (env "BRAID_BENCH_DB_POOL");
        };
      exit 0
  | _ -> ()

(* {1 The tests} *)

type test = { label : string; path : string; connections : int; db : bool }

let tests =
  [
    {
      label = "plaintext";
      path = "/plaintext";
      connections = connections_plain;
      db = false;
    };
    {
      label = "json";
      path = "/json";
      connections = connections_plain;
      db = false;
    };
    { label = "db"; path = "/db"; connections = connections_db; db = true };
    {
      label = "queries (20)";
      path = "/queries?queries=20";
      connections = connections_db;
      db = true;
    };
    {
      label = "fortunes";
      path = "/fortunes";
      connections = connections_db;
      db = true;
    };
    {
      label = "updates (20)";
      path = "/updates?queries=20";
      connections = connections_db;
      db = true;
    };
  ]

(* {1 The servers} *)

let source_root () = Filename.dirname (Filename.dirname (results_dir ()))
let peer_dir () = Filename.concat (source_root ()) "bench/peers/_build"

(* The peer's sources, whose change the binary must not predate. *)
let peer_sources = function
  | "web-go" -> [ "web-go/main.go"; "web-go/go.mod" ]
  | _ -> [ "web-rust/src/main.rs"; "web-rust/Cargo.toml" ]

(* [None] if not built: the peer is then left out, said on stderr and in
   the table, as the other benchmarks leave out a peer not installed. *)
let peer_binary name =
  let path = Filename.concat (peer_dir ()) name in
  if Sys.file_exists path then (
    let built = (Unix.stat path).st_mtime in
    List.iter
      (fun src ->
        let src = Filename.concat (Filename.dirname (peer_dir ())) src in
        if Sys.file_exists src && (Unix.stat src).st_mtime > built then
          progress
            "web: %s is newer than %s: rebuild with bench/peers/build-web.sh"
            src path)
      (peer_sources name);
    Some path)
  else None

let how_to_build = "not built: run bench/peers/build-web.sh"

let start_braid ~url ~port =
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      ~env:
        [
          ("BRAID_BENCH_ROLE", role);
          ("BRAID_BENCH_PORT", string_of_int port);
          ("BRAID_BENCH_DATABASE_URL", url);
          ("BRAID_BENCH_DB_POOL", string_of_int pool_size);
        ]
      (Procs.self_role_argv ()) ~port
  in
  (proc, fun () -> Procs.stop proc)

let start_peer name ~url ~port =
  Option.map
    (fun binary ->
      let proc =
        Procs.spawn ~cpu:Bench_server.server_cpu ~name
          [ binary; string_of_int port; url; string_of_int pool_size ]
          ~port
      in
      (proc, fun () -> Procs.stop proc))
    (peer_binary name)

let start_servers ~url =
  Peers.start_all ~experiment:"web"
    [
      ("braid", fun ~port -> Some (start_braid ~url ~port));
      ("go", start_peer "web-go" ~url);
      ("rust", start_peer "web-rust" ~url);
    ]

(* {1 Checking the answers} *)

type answer = { status : int; headers : (string * string) list; body : string }

let rec dechunk s i acc =
  let eol = String.index_from s i '\r' in
  let size_text = String.sub s i (eol - i) in
  let size_text =
    match String.index_opt size_text ';' with
    | Some j -> String.sub size_text 0 j
    | None -> size_text
  in
  match int_of_string_opt ("0x" ^ String.trim size_text) with
  | Some 0 -> String.concat "" (List.rev acc)
  | Some n -> dechunk s (eol + 2 + n + 2) (String.sub s (eol + 2) n :: acc)
  | None -> failwith "bad chunk size"

(* One GET on a fresh connection, read to its end. *)
let fetch ~port target =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      Unix.setsockopt_float s SO_RCVTIMEO 10.;
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
      let request =
        Printf.sprintf
          "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
          target port
      in
      ignore (Unix.write_substring s request 0 (String.length request));
      let b = Buffer.create 4096 and chunk = Bytes.create 65536 in
      let rec read () =
        match Unix.read s chunk 0 (Bytes.length chunk) with
        | 0 -> ()
        | n ->
            Buffer.add_subbytes b chunk 0 n;
            read ()
      in
      read ();
      let all = Buffer.contents b in
      let fail why =
        failwith (Printf.sprintf "GET %s: %s in %S" target why all)
      in
      let rec head_end i =
        if i + 4 > String.length all then fail "no end of head"
        else if String.sub all i 4 = "\r\n\r\n" then i
        else head_end (i + 1)
      in
      let e = head_end 0 in
      match String.split_on_char '\n' (String.sub all 0 e) with
      | [] -> fail "no status line"
      | status_line :: lines ->
          let status =
            match String.split_on_char ' ' status_line with
            | _ :: code :: _ -> (
                match int_of_string_opt code with
                | Some c -> c
                | None -> fail "bad status line")
            | _ -> fail "bad status line"
          in
          let headers =
            List.filter_map
              (fun line ->
                Option.map
                  (fun i ->
                    ( String.lowercase_ascii (String.sub line 0 i),
                      String.trim
                        (String.sub line (i + 1) (String.length line - i - 1))
                    ))
                  (String.index_opt line ':'))
              lines
          in
          let body = String.sub all (e + 4) (String.length all - e - 4) in
          let body =
            match List.assoc_opt "transfer-encoding" headers with
            | Some te when String.lowercase_ascii te = "chunked" -> (
                try dechunk body 0 [] with _ -> fail "bad chunked body")
            | _ -> body
          in
          { status; headers; body })

let contains ~sub s =
  let n = String.length sub and m = String.length s in
  let rec at i = i + n <= m && (String.sub s i n = sub || at (i + 1)) in
  at 0

let count ~sub s =
  let n = String.length sub in
  let rec go i acc =
    if i + n > String.length s then acc
    else if String.sub s i n = sub then go (i + n) (acc + 1)
    else go (i + 1) acc
  in
  go 0 0

exception Not_implemented

(* [get s path] is the body of a 200 with [Server], [Date] and a
   [Content-Type] starting with [content_type]; raises [Not_implemented] on
   a 501 and [Failure] on anything else. *)
let get (s : Peers.server) ~content_type path =
  let fail fmt =
    Printf.ksprintf
      (fun m -> failwith (Printf.sprintf "web: %s: GET %s: %s" s.label path m))
      fmt
  in
  let a = fetch ~port:s.port path in
  if a.status = 501 then raise Not_implemented;
  if a.status <> 200 then fail "status %d: %s" a.status a.body;
  List.iter
    (fun h -> if not (List.mem_assoc h a.headers) then fail "no %s header" h)
    [ "server"; "date" ];
  (match List.assoc_opt "content-type" a.headers with
  | Some ct when String.starts_with ~prefix:content_type ct -> ()
  | ct ->
      fail "Content-Type %s, not %s"
        (Option.value ct ~default:"none")
        content_type);
  a.body

let json s path =
  let body = get s ~content_type:"application/json" path in
  match Yojson.Safe.from_string body with
  | j -> j
  | exception Yojson.Json_error e ->
      failwith
        (Printf.sprintf "web: %s: GET %s: not JSON (%s): %s" s.label path e body)

let world (s : Peers.server) path = function
  | `Assoc [ ("id", `Int id); ("randomNumber", `Int n) ]
    when 1 <= id && id <= 10_000 && 1 <= n && n <= 10_000 ->
      (id, n)
  | j ->
      failwith
        (Printf.sprintf "web: %s: GET %s: %s is not a World row" s.label path
           (Yojson.Safe.to_string j))

let worlds (s : Peers.server) path ~n =
  match json s path with
  | `List l when List.length l = n -> List.map (world s path) l
  | j ->
      failwith
        (Printf.sprintf "web: %s: GET %s: not an array of %d rows: %s" s.label
           path n (Yojson.Safe.to_string j))

(* What TFB's verifier looks at, for one test of one server. *)
let check db (s : Peers.server) test =
  let fail why =
    failwith (Printf.sprintf "web: %s: %s: %s" s.label test.path why)
  in
  match test.label with
  | "plaintext" ->
      let body = get s ~content_type:"text/plain" test.path in
      if body <> "Hello, World!" then fail ("answered " ^ body)
  | "json" -> (
      match json s test.path with
      | `Assoc [ ("message", `String "Hello, World!") ] -> ()
      | j -> fail (Yojson.Safe.to_string j))
  | "db" -> ignore (world s test.path (json s test.path))
  | "queries (20)" ->
      List.iter
        (fun (q, n) -> ignore (worlds s ("/queries" ^ q) ~n))
        [
          ("?queries=20", 20);
          ("", 1);
          ("?queries=foo", 1);
          ("?queries=0", 1);
          ("?queries=501", 500);
        ]
  | "fortunes" ->
      let page = get s ~content_type:"text/html" test.path in
      let expect what ok = if not ok then fail (what ^ " in:\n" ^ page) in
      expect "no escaped <script> fortune"
        (contains ~sub:"&lt;script&gt;alert(" page);
      expect "an unescaped <script>" (not (contains ~sub:"<script>" page));
      expect "no request-time fortune"
        (contains ~sub:"Additional fortune added at request time." page);
      expect "no Japanese fortune"
        (contains ~sub:(List.assoc 12 Postgres.fortunes) page);
      expect "not 13 rows" (count ~sub:"<tr><td>" page = 13);
      (* Sorted by message: the <script> one first, the Japanese one last. *)
      expect "not sorted"
        (contains ~sub:"<tr><th>id</th><th>message</th></tr><tr><td>11</td>"
           page
        && String.ends_with
             ~suffix:
               (Printf.sprintf
                  "<tr><td>12</td><td>%s</td></tr></table></body></html>"
                  (List.assoc 12 Postgres.fortunes))
             (String.trim page))
  | "updates (20)" ->
      let rows = worlds s test.path ~n:20 in
      (* The last value a request gave each row is in the database. *)
      let last = Hashtbl.create 20 in
      List.iter (fun (id, n) -> Hashtbl.replace last id n) rows;
      let ids =
        Hashtbl.fold (fun id _ acc -> string_of_int id :: acc) last []
      in
      let stored =
        Postgres.query db
          ("SELECT id, randomnumber FROM world WHERE id IN ("
         ^ String.concat ", " ids ^ ")")
        |> String.split_on_char '\n'
        |> List.filter_map (fun l ->
               match String.split_on_char '|' (String.trim l) with
               | [ id; n ] -> Some (int_of_string id, int_of_string n)
               | _ -> None)
      in
      Hashtbl.iter
        (fun id n ->
          if List.assoc_opt id stored <> Some n then
            fail (Printf.sprintf "row %d answered %d but not written" id n))
        last
  | _ -> assert false

(* {1 Measurements} *)

type run = { rps : float; cpu_us : float; db_cpu_us : float }

(* Fields 14-17 of /proc/PID/stat (utime, stime, cutime, cstime: the
   process's threads, then its children it has waited for), in ticks. *)
let stat_ticks pid =
  match
    In_channel.with_open_bin
      (Printf.sprintf "/proc/%d/stat" pid)
      In_channel.input_all
  with
  | exception Sys_error _ -> None
  | stat -> (
      (* The fields after the command name, which may hold spaces. *)
      let i = String.rindex stat ')' + 2 in
      match
        String.split_on_char ' ' (String.sub stat i (String.length stat - i))
      with
      | _state :: _ppid :: _pgrp :: _session :: _tty :: _tpgid :: _flags
        :: _minflt :: _cminflt :: _majflt :: _cmajflt :: u :: s :: cu :: cs :: _
        ->
          Some
            ( int_of_string u + int_of_string s,
              int_of_string cu + int_of_string cs )
      | _ -> None)

(* PostgreSQL's CPU time so far: the postmaster's, its backends' and that of
   the backends gone (autovacuum's workers come and go), so that it only
   grows. *)
let db_cpu_seconds db =
  match Postgres.server_pids db with
  | [] -> nan
  | postmaster :: backends ->
      let own, gone = Option.value (stat_ticks postmaster) ~default:(0, 0) in
      let live =
        List.fold_left
          (fun acc pid -> acc + Option.fold ~none:0 ~some:fst (stat_ticks pid))
          0 backends
      in
      float (own + gone + live) /. 100.

let url (s : Peers.server) test =
  Printf.sprintf "http://127.0.0.1:%d%s" s.port test.path

let measure db (s : Peers.server) test ~seconds =
  let cpu0 = Procs.cpu_seconds s.proc and db0 = db_cpu_seconds db in
  match
    Wrk.run ~cpu:Bench_server.client_cpu ~connections:test.connections ~seconds
      (url s test)
  with
  | w ->
      let per x = x /. float w.requests *. 1e6 in
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      let db_cpu = db_cpu_seconds db -. db0 in
      progress
        "web: %s, %s: %.0f req/s, %.1f us server CPU, %.1f us database CPU per \
         request"
        s.label test.label w.requests_per_second (per cpu) (per db_cpu);
      Ok
        {
          rps = w.requests_per_second;
          cpu_us = per cpu;
          db_cpu_us = per db_cpu;
        }
  | exception Failure msg -> Error msg

let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

(* One round: the three afresh, every answer checked, then each test with
   the servers taking turns. *)
let run_round db ~tally ~missing ~round ~rounds ~seconds ~warm_up =
  let servers = start_servers ~url:(Postgres.url db) in
  Fun.protect
    ~finally:(fun () -> Peers.stop_all servers)
    (fun () ->
      List.iter
        (fun (s : Peers.server) ->
          List.iter
            (fun test ->
              match check db s test with
              | () -> ()
              | exception Not_implemented ->
                  if round = 1 then
                    progress "web: %s answers %s with 501: not implemented"
                      s.label test.path;
                  Hashtbl.replace missing (s.label, test.label) ())
            tests)
        servers;
      let order = if round mod 2 = 0 then List.rev servers else servers in
      List.iter
        (fun test ->
          List.iter
            (fun (s : Peers.server) ->
              if not (Hashtbl.mem missing (s.label, test.label)) then (
                Option.iter
                  (fun seconds ->
                    match
                      Wrk.run ~cpu:Bench_server.client_cpu
                        ~connections:test.connections ~seconds (url s test)
                    with
                    | _ -> ()
                    | exception Failure msg ->
                        progress "web: warm-up failed: %s" msg)
                  warm_up;
                progress "web: round %d/%d, %s, %s (%d s)" round rounds s.label
                  test.label seconds;
                let r = measure db s test ~seconds in
                Result.iter_error (progress "web: failed: %s") r;
                record tally (s.label, test.label) r))
            order)
        tests;
      List.map (fun (s : Peers.server) -> s.label) servers)

let spread runs =
  if failures runs > 0 || List.length runs < 2 then nan
  else
    let v = List.map (fun r -> (Result.get_ok r).rps) runs in
    let hi = List.fold_left max neg_infinity v
    and lo = List.fold_left min infinity v in
    (hi -. lo) /. median v *. 100.

let figures ~tally ~missing ~labels =
  let implemented label test = not (Hashtbl.mem missing (label, test.label)) in
  let runs label test =
    Option.value (Hashtbl.find_opt tally (label, test.label)) ~default:[]
  in
  let rps label test = median_or_failed (fun r -> r.rps) (runs label test)
  and cpu label test = median_or_failed (fun r -> r.cpu_us) (runs label test) in
  List.concat_map
    (fun test ->
      List.concat_map
        (fun label ->
          let name = Printf.sprintf "%s, %s" label test.label in
          if not (implemented label test) then
            [ row name "not implemented (answers 501)" nan "" ]
          else
            let rs = runs label test in
            [
              row name "requests per second" (rps label test) "req/s";
              row name "server CPU per request" (cpu label test) "us";
            ]
            @ (if test.db then
                 [
                   row name "database CPU per request"
                     (median_or_failed (fun r -> r.db_cpu_us) rs)
                     "us";
                 ]
               else [])
            @ (if List.length rs > 1 then
                 [
                   row name "req/s spread across rounds (max-min)/median"
                     (spread rs) "%";
                 ]
               else [])
            @ failed_row name rs)
        labels
      @ List.concat_map
          (fun peer ->
            if implemented "braid" test && implemented peer test then
              [
                ratio
                  (Printf.sprintf "braid / %s req/s, %s" peer test.label)
                  (rps "braid" test /. rps peer test);
                ratio
                  (Printf.sprintf
                     "braid / %s CPU per request (below 1: Braid uses less), %s"
                     peer test.label)
                  (cpu "braid" test /. cpu peer test);
              ]
            else [])
          (List.filter (( <> ) "braid") labels))
    tests

let run ~quick =
  let rounds = if quick then 2 else 3
  and seconds = if quick then 1 else 5
  and warm_up = if quick then None else Some 1 in
  let unbuilt =
    List.filter_map
      (fun (label, name) ->
        match peer_binary name with
        | Some _ -> None
        | None ->
            progress
              "web: %s/%s is missing, %s left out: build the peers with \
               bench/peers/build-web.sh (Go and Rust toolchains; modules from \
               the Go module proxy, crates from crates.io)"
              (peer_dir ()) name label;
            Some (row label how_to_build nan ""))
      [ ("go", "web-go"); ("rust", "web-rust") ]
  in
  let load =
    row "machine" "load average (1 min) at start" (load_average ()) ""
  in
  let tally = Hashtbl.create 32 and missing = Hashtbl.create 8 in
  Fun.protect
    ~finally:(fun () -> Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      progress "web: starting PostgreSQL";
      Postgres.with_cluster ~cpu:Bench_server.client_cpu (fun db ->
          let labels =
            List.fold_left
              (fun _ round ->
                run_round db ~tally ~missing ~round ~rounds ~seconds ~warm_up)
              [] (List.init rounds succ)
          in
          let built name =
            if not (Sys.file_exists (Filename.concat (peer_dir ()) name)) then
              []
            else
              match
                In_channel.with_open_bin
                  (Filename.concat (peer_dir ()) (name ^ ".version"))
                  In_channel.input_line
              with
              | Some v -> [ row (String.trim v) "peer, as built" nan "" ]
              | None | (exception Sys_error _) -> []
          in
          (load :: figures ~tally ~missing ~labels)
          @ unbuilt @ built "web-go" @ built "web-rust"
          @ [
              row (Postgres.version ()) "database, pinned to core 1 with wrk"
                nan "";
              row "database" "pool connections per server" (float pool_size) "";
              row "rounds" "fresh server processes per server" (float rounds) "";
              row "wrk" "seconds per run" (float seconds) "s";
              row "wrk" "connections, plaintext and json"
                (float connections_plain) "";
              row "wrk" "connections, database tests" (float connections_db) "";
              row "machine" "load average (1 min) at end" (load_average ()) "";
            ]))

let experiment =
  {
    name = "web";
    summary =
      "the TechEmpower tests (plaintext, json, db, 20 queries, fortunes, 20 \
       updates) on PostgreSQL: req/s and server CPU per request with wrk, \
       Braid vs Go net/http+pgx vs Rust axum+tokio-postgres (servers on core \
       0, wrk and PostgreSQL on core 1)";
    run;
  }
