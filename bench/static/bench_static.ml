open Bench_harness
module Procs = Bench_server.Procs
module Wrk = Bench_server.Wrk
module Peers = Bench_server.Peers

let connections = 100

(* The files: a name for the tables, the file's name, its size. *)
let sizes = [ ("1 KiB", "1k.bin", 1024); ("64 KiB", "64k.bin", 65536) ]
let sizes = sizes @ [ ("1 MiB", "1m.bin", 1 lsl 20) ]

(* Bytes no two positions of a period share, so that a response cut or
   shifted anywhere fails the check. *)
let content size =
  String.init size (fun i -> Char.chr (((i * 7) + (i / 251)) land 255))

(* {1 The servers} *)

type server = Peers.server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

let braid_binary () = Peers.braid_binary ~experiment:"static"

let start_braid ~port ~root =
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      [
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
      ~port
  in
  (proc, fun () -> Procs.stop proc)

(* Braid, then the peers that are installed. *)
let start_servers ~root =
  Peers.start_all ~experiment:"static"
    [
      ("braid", fun ~port -> Some (start_braid ~port ~root));
      ( "nginx",
        Peers.start_nginx ~sendfile:true ~cpu:Bench_server.server_cpu ~root ()
      );
      ( "h2o",
        Peers.start_h2o ~connections:4096 ~cpu:Bench_server.server_cpu ~root ()
      );
    ]

(* Every server serves every file intact before anything is measured. *)
let check_answers servers =
  List.iter
    (fun s ->
      List.iter
        (fun (_, file, size) ->
          match Procs.get ~port:s.port ("/" ^ file) with
          | 200, body when body = content size -> ()
          | 200, body ->
              failwith
                (Printf.sprintf "static: %s: /%s gave %d bytes, not the file"
                   s.label file (String.length body))
          | status, _ ->
              failwith
                (Printf.sprintf "static: %s: /%s gave %d" s.label file status))
        sizes)
    servers

(* {1 Measurements} *)

type throughput = { requests_per_second : float; cpu_us : float }

let url s file = Printf.sprintf "http://127.0.0.1:%d/%s" s.port file

(* Wrk fails a run with any error: that cell is failed, not a figure. *)
let throughput s file ~seconds =
  let cpu0 = Procs.cpu_seconds s.proc in
  match
    Wrk.run ~cpu:Bench_server.client_cpu ~connections ~seconds (url s file)
  with
  | wrk ->
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      Ok
        {
          requests_per_second = wrk.requests_per_second;
          cpu_us = cpu /. float wrk.requests *. 1e6;
        }
  | exception Failure msg -> Error msg

(* {1 The experiment} *)

(* Every run's outcome by server and size label, kept for the medians. *)
let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

(* One round: the servers afresh, warmed up on every file, then each size
   in turn, the servers taking turns at each. Returns the servers' labels. *)
let run_round tally ~round ~rounds ~root ~seconds ~warm_up =
  let servers = start_servers ~root in
  Fun.protect
    ~finally:(fun () -> Peers.stop_all servers)
    (fun () ->
      check_answers servers;
      Option.iter
        (fun seconds ->
          List.iter
            (fun s ->
              progress "static: round %d/%d, warming up %s" round rounds s.label;
              List.iter
                (fun (_, file, _) ->
                  match
                    Wrk.run ~cpu:Bench_server.client_cpu ~connections ~seconds
                      (url s file)
                  with
                  | _ -> ()
                  | exception Failure msg ->
                      progress "static: warm-up failed: %s" msg)
                sizes)
            servers)
        warm_up;
      List.iter
        (fun (size, file, _) ->
          List.iter
            (fun s ->
              progress "static: round %d/%d, %s, %s (%d s)" round rounds s.label
                size seconds;
              let r = throughput s file ~seconds in
              Result.iter_error (progress "static: failed: %s") r;
              record tally (s.label, size) r)
            servers)
        sizes;
      List.map (fun s -> s.label) servers)

(* Braid over the peer for every metric: the names say which way is
   better. *)
let figures tally ~labels =
  let peers = List.filter (( <> ) "braid") labels in
  let runs label size = Hashtbl.find tally (label, size) in
  let rps label size =
    median_or_failed (fun r -> r.requests_per_second) (runs label size)
  and cpu label size = median_or_failed (fun r -> r.cpu_us) (runs label size) in
  List.concat_map
    (fun (size, _, _) ->
      List.concat_map
        (fun label ->
          let name = Printf.sprintf "%s, %s" label size in
          [
            row name "requests per second" (rps label size) "req/s";
            row name "server CPU per request" (cpu label size) "us";
          ]
          @ failed_row name (runs label size))
        labels
      @ List.concat_map
          (fun peer ->
            [
              ratio
                (Printf.sprintf "braid / %s req/s, %s" peer size)
                (rps "braid" size /. rps peer size);
              ratio
                (Printf.sprintf
                   "braid / %s CPU per request (below 1: Braid uses less), %s"
                   peer size)
                (cpu "braid" size /. cpu peer size);
            ])
          peers)
    sizes

let run ~quick =
  let rounds = if quick then 1 else 3
  and seconds = if quick then 1 else 5
  and warm_up = if quick then None else Some 1 in
  let load =
    row "machine" "load average (1 min) at start" (load_average ()) ""
  in
  (* One copy of the files for all three, where their unprivileged workers
     can read them. *)
  let root = Peers.temp_dir "braid-bench-static" in
  let tally = Hashtbl.create 16 in
  Fun.protect
    ~finally:(fun () ->
      Peers.remove_tree root;
      Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      List.iter
        (fun (_, file, size) ->
          let path = Filename.concat root file in
          Out_channel.with_open_bin path (fun oc ->
              output_string oc (content size));
          Unix.chmod path 0o644)
        sizes;
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      let labels =
        List.fold_left
          (fun _ round ->
            run_round tally ~round ~rounds ~root ~seconds ~warm_up)
          [] (List.init rounds succ)
      in
      (load :: figures tally ~labels)
      @ [
          row "rounds" "fresh server processes per server" (float rounds) "";
          row "wrk" "seconds per run" (float seconds) "s";
          row "wrk" "connections" (float connections) "";
          row "machine" "load average (1 min) at end" (load_average ()) "";
        ])

let experiment =
  {
    name = "static";
    summary =
      "keep-alive GETs of 1 KiB, 64 KiB and 1 MiB files at 100 connections: \
       req/s and server CPU per request with wrk, Braid vs nginx (sendfile on) \
       vs h2o (server on core 0, wrk on core 1)";
    run;
  }
