open Bench_harness
module Procs = Bench_server.Procs
module Wrk = Bench_server.Wrk
module Peers = Bench_server.Peers

let sizes = [ 10; 100; 1_000; 10_000 ]
let most_connections = List.fold_left max 0 sizes

(* The connections of the largest size, and room for the rest: listeners,
   the files being sent, logs, wrk's own. *)
let descriptors = most_connections + 512
let file = "1k.txt"
let path = "/" ^ file

(* {1 The servers} *)

type server = Peers.server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

let braid_binary () = Peers.braid_binary ~experiment:"scale"

(* "braid: serving http://... with 1 loop, up to 17936 connections" *)
let announced_connections output =
  let rec find = function
    | "up" :: "to" :: n :: "connections" :: _ -> int_of_string_opt n
    | _ :: rest -> find rest
    | [] -> None
  in
  find
    (List.filter (( <> ) "")
       (String.split_on_char ' '
          (String.map (function '\n' -> ' ' | c -> c) output)))

(* The banner follows the listen by a moment. *)
let wait_for_banner proc =
  let deadline = now_s () +. 10. in
  let rec wait () =
    match announced_connections (Procs.output proc) with
    | Some n -> n
    | None when now_s () < deadline ->
        Unix.sleepf 0.02;
        wait ()
    | None ->
        failwith ("scale: braid serve printed no banner:\n" ^ Procs.output proc)
  in
  wait ()

(* [braid serve] raises its descriptor limit to the hard one and derives its
   connection limit from it; [--max-connections] only where that would not
   reach the largest size. Idle keep-alive connections are kept for an
   hour, as the peers are configured to. *)
let start_braid ~backend ~port ~root =
  let _, hard = Procs.descriptor_limits () in
  let limit =
    if Braid_server.Server.connections_for_descriptors hard >= most_connections
    then []
    else [ "--max-connections"; string_of_int most_connections ]
  in
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      ~env:[ ("BRAID_IO_BACKEND", Braid_io.string_of_backend backend) ]
      ([
         braid_binary ();
         "serve";
         "--root";
         root;
         "--port";
         string_of_int port;
         "--domains";
         "1";
         "--keep-alive-timeout";
         "3600";
       ]
      @ limit)
      ~port
  in
  match wait_for_banner proc with
  | n when n >= most_connections -> (proc, n)
  | n ->
      Procs.stop proc;
      failwith
        (Printf.sprintf "scale: braid serve accepts only %d connections" n)
  | exception e ->
      Procs.stop proc;
      raise e

(* Braid, then the peers that are installed. *)
let start_servers ~root =
  let limit = ref 0 in
  let braid backend ~port =
    let proc, braid_limit = start_braid ~backend ~port ~root in
    limit := braid_limit;
    Some (proc, fun () -> Procs.stop proc)
  in
  let servers =
    Peers.start_all ~experiment:"scale"
      [
        ("braid", braid Braid_io.Epoll);
        (* The other backend, compared as a peer: "braid / braid (io_uring)". *)
        ("braid (io_uring)", braid Braid_io.Uring);
        (* A listen queue as long as Braid's (4096; somaxconn caps both), not
           nginx's 511: 10,000 connections arrive at once. *)
        ( "nginx",
          Peers.start_nginx ~backlog:4096 ~connections:descriptors
            ~cpu:Bench_server.server_cpu ~root () );
        ( "h2o",
          Peers.start_h2o ~connections:descriptors ~cpu:Bench_server.server_cpu
            ~root () );
      ]
  in
  (servers, !limit)

let check_answers servers ~expected =
  List.iter
    (fun s ->
      match Procs.get ~port:s.port path with
      | 200, body when body = expected -> ()
      | status, _ ->
          failwith (Printf.sprintf "%s: %s gave %d" s.label path status))
    servers

(* What a server does after a run with many connections (closing them;
   Braid compacts its heap at its sweeper's next look, within a second)
   must not land in the next server's run on the same core: wait until the
   servers' CPU time has not moved for longer than that, at most 5 s. *)
let settle servers =
  let quiet = 1.2 and deadline = now_s () +. 5. in
  let cpu () =
    List.fold_left (fun sum s -> sum +. Procs.cpu_seconds s.proc) 0. servers
  in
  let rec wait cpu_then since =
    if now_s () -. since < quiet && now_s () < deadline then (
      Unix.sleepf 0.1;
      let cpu_now = cpu () in
      if cpu_now = cpu_then then wait cpu_then since
      else wait cpu_now (now_s ()))
  in
  wait (cpu ()) (now_s ())

(* {1 Measurements} *)

type throughput = { requests_per_second : float; cpu_us : float }

let url s = Printf.sprintf "http://127.0.0.1:%d%s" s.port path

(* How many connections [s] has accepted since it held [before] (its
   sockets then), at most: polled until it holds [connections] of them or
   [until]. wrk counts no error for a connection the server leaves in its
   listen queue until wrk's timeout (2 s) has passed, and a short run may
   end first: a server that takes fewer connections than asked would be
   measured at a smaller size. *)
let most_held s ~before ~connections ~until =
  let known = Hashtbl.create 64 in
  List.iter (fun inode -> Hashtbl.replace known inode ()) before;
  let rec poll most =
    let now =
      match Procs.sockets s.proc with
      | Some inodes ->
          List.length
            (List.filter (fun inode -> not (Hashtbl.mem known inode)) inodes)
      | None -> most
    in
    let most = max most now in
    if most >= connections || now_s () >= until then most
    else (
      Unix.sleepf 0.1;
      poll most)
  in
  poll 0

(* Wrk fails a run with any error: that cell is failed, not a figure; so
   is a run in which the server did not hold all of wrk's connections. *)
let throughput s ~connections ~seconds =
  let before = Procs.sockets s.proc in
  let cpu0 = Procs.cpu_seconds s.proc in
  let observe () =
    Option.map
      (fun before ->
        most_held s ~before ~connections
          ~until:(now_s () +. float seconds -. 0.1))
      before
  in
  match
    Wrk.run_observed ~cpu:Bench_server.client_cpu ~connections ~seconds (url s)
      ~observe
  with
  | _, Some held when held < connections ->
      Error
        (Printf.sprintf "%s held at most %d of wrk's %d connections" s.label
           held connections)
  | wrk, _ ->
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      Ok
        {
          requests_per_second = wrk.requests_per_second;
          cpu_us = cpu /. float wrk.requests *. 1e6;
        }
  | exception Failure msg -> Error msg

(* First 2,000 connections of one request each, all open at once, then
   closed, and a wait like the one below: what every server sets up once
   and keeps, whatever its number of connections, is in the baseline (its
   first responses, buffers it keeps for reuse, memory its allocator has
   touched: Braid's loop's 8 MB minor heap, which 2,000 requests go
   through), and so is what a server does after a burst of connections
   (Braid compacts its heap when they have gone). With 100 connections
   first, the part of the minor heap they had not touched (~760 bytes per
   idle connection at 10,000) was counted against the connections. Then the
   idle connections, and a wait of more than two of Braid's sweeper ticks
   (1 s), after which an idle connection has given its buffers back. *)
let warm_up_connections = 2_000

let idle_memory s ~connections =
  Idle_clients.rss_per_connection ~label:s.label
    ~rss:(fun () -> Procs.rss_bytes s.proc)
    ~open_idle:(fun ~count -> Idle_clients.open_idle ~port:s.port ~path ~count)
    ~warm_up:warm_up_connections ~count:connections

(* {1 The experiment} *)

(* Every run's outcome, kept per cell for the medians, with its round for
   the rounds' ratios and the repeats' differences. *)
type tally = {
  speed : (string * int, (int * (throughput, string) result) list) Hashtbl.t;
      (** By server and connections: (round, outcome). *)
  memory : (string, (float, string) result list) Hashtbl.t;  (** By server. *)
}

let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

(* The order of the runs at one size: with [mirrored], each server twice,
   in turn and then in the reverse turn (A B C C B A). The host's speed
   drifts by 10 % and more over tens of seconds here; a drift that goes one
   way through the six runs then weighs the same on every server, where in
   one turn (A B C) it would favour the first or the last. *)
let turns servers ~mirrored =
  if mirrored then servers @ List.rev servers else servers

(* One round: the servers afresh, their memory per idle connection first
   (processes that have served only a few requests), then each size in
   turn, the servers taking [turns] at each. Returns the servers' labels and
   Braid's connection limit. *)
let run_round tally ~round ~rounds ~root ~expected ~seconds ~warm_up ~mirrored =
  let servers, limit = start_servers ~root in
  Fun.protect
    ~finally:(fun () -> Peers.stop_all servers)
    (fun () ->
      check_answers servers ~expected;
      List.iter
        (fun s ->
          progress "scale: round %d/%d, %s, %d idle connections" round rounds
            s.label most_connections;
          let r = idle_memory s ~connections:most_connections in
          Result.iter_error (progress "scale: failed: %s") r;
          record tally.memory s.label r)
        servers;
      settle servers;
      Option.iter
        (fun seconds ->
          List.iter
            (fun s ->
              progress "scale: round %d/%d, warming up %s" round rounds s.label;
              match
                Wrk.run ~cpu:Bench_server.client_cpu ~connections:100 ~seconds
                  (url s)
              with
              | _ -> ()
              | exception Failure msg ->
                  progress "scale: warm-up failed: %s" msg)
            servers)
        warm_up;
      List.iter
        (fun connections ->
          List.iter
            (fun s ->
              let seconds = seconds connections in
              progress "scale: round %d/%d, %s, %d connections (%d s)" round
                rounds s.label connections seconds;
              let r = throughput s ~connections ~seconds in
              (* Each run's figures, for the spread behind the medians. *)
              (match r with
              | Ok t ->
                  progress "scale: %s, %d connections: %.0f req/s, %.2f us/req"
                    s.label connections t.requests_per_second t.cpu_us
              | Error e -> progress "scale: failed: %s" e);
              record tally.speed (s.label, connections) (round, r);
              if connections >= 1000 then settle [ s ])
            (turns servers ~mirrored))
        sizes;
      (List.map (fun s -> s.label) servers, limit))

(* What a round measured of a server at one size: the req/s of each of its
   runs, or [None] if one failed. *)
let round_rps runs round =
  let mine =
    List.filter_map (fun (r, o) -> if r = round then Some o else None) runs
  in
  if mine = [] || failures mine > 0 then None
  else Some (List.map (fun o -> (Result.get_ok o).requests_per_second) mine)

let sum = List.fold_left ( +. ) 0.

(* How far the medians can be trusted, from the runs behind them (full runs
   only: two runs per server and round, several rounds):
   - Braid / peer req/s in each round alone (the sums of their two runs,
     which took turns A B C C B A): the lowest and the highest round;
   - the noise: how much a server's two runs in one round differ (the
     faster over the slower), as the same binary measured twice a few tens
     of seconds apart (median and largest, over every server and round).
   A ratio whose rounds straddle 1.0 by less than that is a tie, not a win
   or a loss. *)
let spread_rows ~labels ~peers ~connections runs =
  let rounds =
    List.sort_uniq compare (List.map fst (runs "braid" connections))
  in
  (* Each server's runs in each round, looked up once. *)
  let by_round =
    List.map
      (fun label ->
        (label, List.map (round_rps (runs label connections)) rounds))
      labels
  in
  let per_round = List.concat_map snd by_round in
  let twice =
    List.for_all
      (function Some [ _; _ ] | None -> true | Some _ -> false)
      per_round
  in
  if List.compare_length_with rounds 2 < 0 || not twice then []
  else
    let braid = List.assoc "braid" by_round in
    let ratio_rows peer =
      match
        List.filter_map
          (function
            | Some braid, Some other -> Some (sum braid /. sum other)
            | _ -> None)
          (List.combine braid (List.assoc peer by_round))
      with
      | [] -> []
      | ratios ->
          let name =
            Printf.sprintf "braid / %s req/s, %d connections" peer connections
          in
          [
            row name "ratio in the lowest round"
              (List.fold_left min infinity ratios)
              "x";
            row name "ratio in the highest round"
              (List.fold_left max neg_infinity ratios)
              "x";
          ]
    in
    let differences =
      List.filter_map
        (function
          | Some [ a; b ] ->
              Some (100. *. ((Float.max a b /. Float.min a b) -. 1.))
          | Some _ | None -> None)
        per_round
    in
    List.concat_map ratio_rows peers
    @
    match differences with
    | [] -> []
    | _ ->
        let name = Printf.sprintf "repeats, %d connections" connections in
        [
          row name "a server's two runs in a round: median difference"
            (median differences) "%";
          row name "a server's two runs in a round: largest difference"
            (List.fold_left max 0. differences)
            "%";
        ]

(* The rows of every cell, and Braid's ratios to each peer: the harness's
   ratios are usually "better than 1 when Braid is better"; these are Braid
   over the peer for every metric, so the names say which way is better. *)
let figures tally ~labels =
  let peers = List.filter (( <> ) "braid") labels in
  let runs label connections = Hashtbl.find tally.speed (label, connections) in
  let speed label connections = List.map snd (runs label connections) in
  let rps label connections =
    median_or_failed (fun r -> r.requests_per_second) (speed label connections)
  and cpu label connections =
    median_or_failed (fun r -> r.cpu_us) (speed label connections)
  and rss label = median_or_failed Fun.id (Hashtbl.find tally.memory label) in
  let throughput_rows connections =
    List.concat_map
      (fun label ->
        let name = Printf.sprintf "%s, %d connections" label connections in
        [
          row name "requests per second" (rps label connections) "req/s";
          row name "server CPU per request" (cpu label connections) "us";
        ]
        @ failed_row name (speed label connections))
      labels
    @ List.concat_map
        (fun peer ->
          [
            ratio
              (Printf.sprintf "braid / %s req/s, %d connections" peer
                 connections)
              (rps "braid" connections /. rps peer connections);
            ratio
              (Printf.sprintf
                 "braid / %s CPU per request (below 1: Braid uses less), %d \
                  connections"
                 peer connections)
              (cpu "braid" connections /. cpu peer connections);
          ])
        peers
    @ spread_rows ~labels ~peers ~connections runs
  in
  let memory_rows =
    List.concat_map
      (fun label ->
        let name =
          Printf.sprintf "%s, %d idle connections" label most_connections
        in
        row name "RSS per idle connection" (rss label) "bytes"
        :: failed_row name (Hashtbl.find tally.memory label))
      labels
    @ List.map
        (fun peer ->
          ratio
            (Printf.sprintf
               "braid / %s RSS per idle connection (below 1: Braid uses less)"
               peer)
            (rss "braid" /. rss peer))
        peers
  in
  List.concat_map throughput_rows sizes @ memory_rows

let somaxconn () =
  match
    In_channel.with_open_text "/proc/sys/net/core/somaxconn"
      In_channel.input_all
  with
  | s -> Option.value (float_of_string_opt (String.trim s)) ~default:nan
  | exception Sys_error _ -> nan

let run ~quick =
  (* Quick: no warm-up run, but the idle connections before have already
     had each server answer 10,100 requests; one turn of the servers. *)
  let rounds = if quick then 1 else 3
  and mirrored = not quick
  (* wrk's run includes its connecting: at 10,000 connections, the server
     holds them all only after 0.6 to 1 s here. Full: each server runs
     twice per round ([turns]), 10 s in all at each size but the largest,
     whose runs keep 10 s each so that connecting stays a small part. *)
  and seconds connections =
    if quick then if connections >= 10_000 then 3 else 1
    else if connections >= 10_000 then 10
    else 5
  and warm_up = if quick then None else Some 2 in
  let load =
    row "machine" "load average (1 min) at start" (load_average ()) ""
  in
  let expected =
    In_channel.with_open_bin
      (Filename.concat (Bench_server.public ()) file)
      In_channel.input_all
  in
  (* One copy of the file for all three, where their unprivileged workers
     can read it. *)
  let root = Peers.temp_dir "braid-bench-scale" in
  let tally = { speed = Hashtbl.create 16; memory = Hashtbl.create 4 } in
  (* The idle connections are this process's: on core 1, as wrk. *)
  Fun.protect
    ~finally:(fun () ->
      Peers.remove_tree root;
      Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      Out_channel.with_open_bin (Filename.concat root file) (fun oc ->
          output_string oc expected);
      Unix.chmod (Filename.concat root file) 0o644;
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      let soft_limit, (labels, braid_limit) =
        Procs.with_descriptor_limit descriptors (fun () ->
            let soft_limit = fst (Procs.descriptor_limits ()) in
            ( soft_limit,
              List.fold_left
                (fun _ round ->
                  run_round tally ~round ~rounds ~root ~expected ~seconds
                    ~warm_up ~mirrored)
                ([], 0) (List.init rounds succ) ))
      in
      (load :: figures tally ~labels)
      @ [
          row "rounds" "fresh server processes per server" (float rounds) "";
          row "rounds" "runs per server at each size in a round"
            (if mirrored then 2. else 1.)
            "";
        ]
      @ List.map
          (fun connections ->
            row "wrk"
              (Printf.sprintf "seconds per run, %d connections" connections)
              (float (seconds connections))
              "s")
          sizes
      @ [
          row "machine" "descriptor limit (soft) of wrk and the idle clients"
            (float soft_limit) "";
          row "machine" "net.core.somaxconn (caps listen queues)" (somaxconn ())
            "";
          row "braid" "connection limit (its banner)" (float braid_limit) "";
          row "machine" "load average (1 min) at end" (load_average ()) "";
        ])

let experiment =
  {
    name = "scale";
    summary =
      "10 to 10,000 keep-alive connections, 1 KiB static file: req/s and \
       server CPU per request with wrk, and RSS per idle connection, for Braid \
       vs nginx vs h2o (server on core 0, wrk on core 1)";
    run;
  }

module Idle_clients = Idle_clients
