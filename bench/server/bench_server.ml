open Bench_harness

(* When re-executed as a server, serve and never return. *)
let () = Roles.dispatch ()

module Procs = Procs
module Wrk = Wrk
module Peers = Peers

let server_cpu = 0
let client_cpu = 1
let source_root () = Filename.dirname (Filename.dirname (results_dir ()))
let public () = Filename.concat (source_root ()) "examples/public"

let load_row () =
  row "machine" "load average (1 min) at start" (Procs.load_average ()) ""

(* [backend]: braid_io's, for Braid's roles (BRAID_IO_BACKEND: epoll unless
   said, whatever this process's environment says). *)
let start_role ?root ?(env = []) ?(backend = Braid_io.Epoll) name ~port =
  Procs.spawn ~cpu:server_cpu ~name
    ~env:
      ([
         (Roles.variable, name);
         ("BRAID_BENCH_PORT", string_of_int port);
         ("BRAID_IO_BACKEND", Braid_io.string_of_backend backend);
       ]
      @ (match root with Some r -> [ ("BRAID_BENCH_ROOT", r) ] | None -> [])
      @ env)
    (Procs.self_role_argv ()) ~port

(* {1 http} *)

type contender = {
  name : string;
  port : int;
  proc : Procs.t;  (** For its CPU time. *)
  stop : unit -> unit;
  counts_words : bool;  (** Answers [GET /debug/gc] (Braid's roles). *)
}

(* Words allocated by a Braid role so far (minor + major - promoted). *)
let allocated_by c =
  match Procs.get ~port:c.port "/debug/gc" with
  | 200, body -> (
      match
        List.map float_of_string (String.split_on_char ' ' (String.trim body))
      with
      | [ minor; major; promoted ] -> minor +. major -. promoted
      | _ -> failwith ("bad /debug/gc answer: " ^ body))
  | status, _ -> failwith (Printf.sprintf "%s: /debug/gc gave %d" c.name status)

type round = { wrk : Wrk.result; cpu_us : float; words : float }

let effects = "braid"
let direct = "braid (direct calls)"
let traced = "braid (traced)"

(* The traced contender's event ring (a file of 64 MiB per process, left
   behind when the process is killed) goes to a directory of the run's own,
   removed at its end. Nothing reads the ring: the cost measured is the
   probes' writes, which is what a program pays while [braid trace] reads. *)
let with_ring_directory f =
  let dir = Filename.temp_dir "braid-bench-ring" "" in
  Fun.protect
    ~finally:(fun () ->
      Array.iter
        (fun file -> try Sys.remove (Filename.concat dir file) with _ -> ())
        (try Sys.readdir dir with Sys_error _ -> [||]);
      try Sys.rmdir dir with Sys_error _ -> ())
    (fun () -> f dir)

let on_uring = "braid (io_uring)"

let run_http ~quick =
  with_ring_directory @@ fun ring_dir ->
  let root = public () in
  let expected =
    In_channel.with_open_bin
      (Filename.concat root "1k.txt")
      In_channel.input_all
  in
  let load = load_row () in
  let running = ref [] in
  let stop_all () =
    List.iter (fun c -> c.stop ()) !running;
    running := []
  in
  (* Every round starts every server afresh: two processes of the same code
     differ by a few percent for as long as they live (see reverse-post),
     so the medians are over fresh processes. *)
  let start_all () =
    let add ?(counts_words = false) name port proc stop =
      running := !running @ [ { name; port; proc; stop; counts_words } ]
    in
    let port = Procs.free_port () in
    let p = start_role "braid-static" ~root ~port in
    add ~counts_words:true effects port p (fun () -> Procs.stop p);
    let port = Procs.free_port () in
    let p = start_role "braid-static" ~backend:Uring ~root ~port in
    add ~counts_words:true on_uring port p (fun () -> Procs.stop p);
    let port = Procs.free_port () in
    let p = start_role "braid-static-direct" ~root ~port in
    add ~counts_words:true direct port p (fun () -> Procs.stop p);
    let port = Procs.free_port () in
    let p =
      start_role "braid-static" ~root ~port
        ~env:
          [
            ("BRAID_TRACE_EVENTS", "1"); ("OCAML_RUNTIME_EVENTS_DIR", ring_dir);
          ]
    in
    add ~counts_words:true traced port p (fun () -> Procs.stop p);
    let port = Procs.free_port () in
    (match Peers.start_nginx ~cpu:server_cpu ~port ~root () with
    | Some (p, stop) -> add "nginx" port p stop
    | None -> progress "http: nginx not found, skipped");
    let port = Procs.free_port () in
    let p = start_role "cohttp-static" ~root ~port in
    add "cohttp-lwt-unix" port p (fun () -> Procs.stop p);
    List.iter
      (fun c ->
        match Procs.get ~port:c.port "/1k.txt" with
        | 200, body when body = expected -> ()
        | status, _ ->
            failwith (Printf.sprintf "%s: /1k.txt gave %d" c.name status))
      !running;
    !running
  in
  Fun.protect ~finally:stop_all (fun () ->
      let seconds = if quick then 2 else 10
      and rounds = if quick then 1 else 5 in
      let url c = Printf.sprintf "http://127.0.0.1:%d/1k.txt" c.port in
      let results = Hashtbl.create 4 and names = ref [] in
      for round = 1 to rounds do
        let contenders = start_all () in
        names := List.map (fun c -> c.name) contenders;
        List.iter
          (fun c ->
            progress "http: round %d/%d, warming up %s" round rounds c.name;
            ignore (Wrk.run ~cpu:client_cpu ~connections:100 ~seconds:1 (url c)))
          contenders;
        (* Rounds alternate the order, so a noisy neighbour hits everyone. *)
        let order =
          if round mod 2 = 0 then List.rev contenders else contenders
        in
        List.iter
          (fun c ->
            progress "http: round %d/%d, %s (%d s)" round rounds c.name seconds;
            let words0 = if c.counts_words then allocated_by c else nan in
            let cpu0 = Procs.cpu_seconds c.proc in
            let wrk =
              Wrk.run ~cpu:client_cpu ~connections:100 ~seconds (url c)
            in
            let cpu = Procs.cpu_seconds c.proc -. cpu0 in
            let words =
              if c.counts_words then allocated_by c -. words0 else nan
            in
            let per x = x /. float wrk.requests in
            let r = { wrk; cpu_us = per cpu *. 1e6; words = per words } in
            Hashtbl.replace results c.name
              (r :: Option.value (Hashtbl.find_opt results c.name) ~default:[]))
          order;
        stop_all ()
      done;
      let contenders =
        List.map
          (fun name ->
            (name, List.mem name [ effects; direct; traced; on_uring ]))
          !names
      in
      let median_of f name = median (List.map f (Hashtbl.find results name)) in
      (* How far apart the rounds were: (largest - smallest) / median, in
         percent. A ratio between two servers that is inside both their
         spreads says nothing. *)
      let spread_of f name =
        let values = List.map f (Hashtbl.find results name) in
        let largest = List.fold_left Float.max neg_infinity values
        and smallest = List.fold_left Float.min infinity values in
        100. *. (largest -. smallest) /. median values
      in
      let rps = median_of (fun r -> r.wrk.requests_per_second)
      and cpu = median_of (fun r -> r.cpu_us)
      and words = median_of (fun r -> r.words) in
      let rows =
        List.concat_map
          (fun (name, counts_words) ->
            [
              row name "requests per second" (rps name) "req/s";
              row name "latency p50"
                (median_of (fun r -> r.wrk.p50_ms) name)
                "ms";
              row name "latency p99"
                (median_of (fun r -> r.wrk.p99_ms) name)
                "ms";
              row name "server CPU per request" (cpu name) "us";
              row name "req/s round spread"
                (spread_of (fun r -> r.wrk.requests_per_second) name)
                "% of median";
              row name "CPU per request round spread"
                (spread_of (fun r -> r.cpu_us) name)
                "% of median";
            ]
            @
            if counts_words then
              [ row name "allocated per request" (words name) "words" ]
            else [])
          contenders
      in
      let ratio_to peer =
        if Hashtbl.mem results peer then
          [
            ratio
              (Printf.sprintf "braid / %s (req/s)" peer)
              (rps effects /. rps peer);
            ratio
              (Printf.sprintf "%s / braid (server CPU per request)" peer)
              (cpu peer /. cpu effects);
          ]
        else []
      in
      (* The effects-versus-direct-calls question, as reverse-post asks it:
         each ratio is direct's cost over the effects' (1 = no cost). *)
      let effects_cost =
        [
          ratio "effects / direct calls (req/s)" (rps effects /. rps direct);
          ratio "direct / effects (server CPU per request)"
            (cpu direct /. cpu effects);
          ratio "direct / effects (allocation per request)"
            (words direct /. words effects);
        ]
      in
      (* The issue's bound for tracing: on, at most 3 % of req/s. *)
      let tracing_cost =
        [
          ratio "traced / untraced (req/s)" (rps traced /. rps effects);
          ratio "traced / untraced (server CPU per request)"
            (cpu traced /. cpu effects);
        ]
      in
      let backends =
        [
          ratio "braid io_uring / epoll (req/s)" (rps on_uring /. rps effects);
          ratio "braid epoll / io_uring (server CPU per request)"
            (cpu effects /. cpu on_uring);
        ]
      in
      (load :: rows) @ ratio_to "nginx" @ ratio_to "cohttp-lwt-unix" @ backends
      @ effects_cost @ tracing_cost
      @ [
          row "rounds" "fresh server processes per contender" (float rounds) "";
          row "machine" "load average (1 min) at end" (Procs.load_average ()) "";
        ])

let http =
  {
    name = "http";
    summary =
      "wrk keep-alive GET of a 1 KiB static file, 100 connections: Braid vs \
       nginx vs cohttp-lwt-unix, Braid calling its services directly and Braid \
       with its trace events on (server on core 0, wrk on core 1); throughput, \
       latency, server CPU and allocation per request";
    run = run_http;
  }

(* {1 reverse-post} *)

let sizes = [ 10_000; 25_000; 50_000; 75_000; 100_000 ]

let random_body n =
  let st = Random.State.make [| n |] in
  String.init n (fun _ -> Char.chr (Random.State.int st 256))

type server = {
  label : string;
  client : Reverse_client.t;
  requests : (int * Reverse_client.request) list;
  small : Reverse_client.request;
}

let allocated_words client =
  match
    List.map float_of_string
      (String.split_on_char ' '
         (String.trim (Reverse_client.get client "/debug/gc")))
  with
  | [ minor; major; promoted ] -> minor +. major -. promoted
  | _ -> failwith "bad /debug/gc answer"

(* Two processes running the same code differ by a few percent in speed
   for as long as they live (where their memory lands, what shares cache
   sets with what): seen as 0.92 to 1.05 between two runs of this very
   comparison. So each session starts both servers afresh, and the figures
   are taken over several sessions: with six, two full runs still differed
   by up to 7 % at one size, hence twelve. *)
let run_reverse ~quick =
  let load = load_row () in
  let sessions = if quick then 1 else 12
  and reps = if quick then 3 else 4
  and posts = 100 in
  let small_posts = if quick then 2_000 else 5_000 in
  let procs = ref [] in
  Fun.protect
    ~finally:(fun () ->
      List.iter Procs.stop !procs;
      Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      Procs.pin_self (string_of_int client_cpu);
      let start label role_name =
        let port = Procs.free_port () in
        procs := start_role role_name ~port :: !procs;
        let client = Reverse_client.connect ~port in
        List.iter
          (fun n -> Reverse_client.check_reverse client ~port (random_body n))
          [ 1; 1000; 100_000 ];
        {
          label;
          client;
          requests =
            List.map
              (fun n -> (n, Reverse_client.request ~port (random_body n)))
              sizes;
          small = Reverse_client.request ~port (random_body 100);
        }
      in
      let times = Hashtbl.create 10 and allocated = Hashtbl.create 2 in
      let record table key v =
        Hashtbl.replace table key
          (v :: Option.value (Hashtbl.find_opt table key) ~default:[])
      in
      (* Allocation of one server process over the small POSTs. *)
      let alloc s =
        for _ = 1 to 1000 do
          Reverse_client.post s.client s.small
        done;
        let before = allocated_words s.client in
        for _ = 1 to small_posts do
          Reverse_client.post s.client s.small
        done;
        let after = allocated_words s.client in
        (after -. before) /. float small_posts
      in
      for session = 1 to sessions do
        let effects = start "effects" "braid-reverse-effects"
        and direct = start "direct calls" "braid-reverse-direct" in
        let servers = [ effects; direct ] in
        progress "reverse-post: session %d/%d, warming up" session sessions;
        List.iter
          (fun s ->
            for _ = 1 to 20 do
              List.iter
                (fun (_, r) -> Reverse_client.post s.client r)
                s.requests
            done)
          servers;
        (* Response times, request by request: the two servers alternate,
           size by size, so that drift and noisy neighbours hit both. *)
        for rep = 1 to reps do
          List.iter
            (fun size ->
              let order =
                if (session + rep) mod 2 = 0 then [ direct; effects ]
                else servers
              in
              List.iter
                (fun s ->
                  let r = List.assoc size s.requests in
                  for _ = 1 to posts do
                    let t0 = now_s () in
                    Reverse_client.post s.client r;
                    record times (s.label, size) ((now_s () -. t0) *. 1000.)
                  done)
                order)
            sizes
        done;
        progress "reverse-post: session %d/%d, %d POSTs of 100 B each" session
          sessions small_posts;
        List.iter (fun s -> record allocated s.label (alloc s)) servers;
        List.iter (fun s -> Reverse_client.close s.client) servers;
        List.iter Procs.stop !procs;
        procs := []
      done;
      let mean l = List.fold_left ( +. ) 0. l /. float (List.length l) in
      let effects = "effects" and direct = "direct calls" in
      let time_rows =
        List.concat_map
          (fun size ->
            let stat f label = f (Hashtbl.find times (label, size)) in
            let name label = Printf.sprintf "%s, %d KB" label (size / 1000) in
            let kb = size / 1000 in
            [
              row (name effects) "mean response time" (stat mean effects) "ms";
              row (name direct) "mean response time" (stat mean direct) "ms";
              ratio
                (Printf.sprintf "direct / effects mean, %d KB" kb)
                (stat mean direct /. stat mean effects);
              row (name effects) "median response time" (stat median effects)
                "ms";
              row (name direct) "median response time" (stat median direct) "ms";
              ratio
                (Printf.sprintf "direct / effects median, %d KB" kb)
                (stat median direct /. stat median effects);
            ])
          sizes
      in
      let a_effects = median (Hashtbl.find allocated effects)
      and a_direct = median (Hashtbl.find allocated direct) in
      let words_to_mb w =
        w *. float (Sys.word_size / 8) *. float small_posts /. 1e6
      in
      (load :: time_rows)
      @ [
          row "sessions" "fresh server processes per variant" (float sessions)
            "";
          row "effects, 100 B POST" "allocated per request" a_effects "words";
          row "direct calls, 100 B POST" "allocated per request" a_direct
            "words";
          row
            (Printf.sprintf "effects, %d POSTs of 100 B" small_posts)
            "total allocation" (words_to_mb a_effects) "MB";
          row
            (Printf.sprintf "direct calls, %d POSTs of 100 B" small_posts)
            "total allocation" (words_to_mb a_direct) "MB";
          ratio "direct / effects allocation" (a_direct /. a_effects);
          row "machine" "load average (1 min) at end" (Procs.load_average ()) "";
        ])

let reverse_post =
  {
    name = "reverse-post";
    summary =
      "the 2022 study: sequential POSTs to /reverse (10-100 KB) and allocation \
       per 100 B POST, same server with effects vs direct calls";
    run = run_reverse;
  }
