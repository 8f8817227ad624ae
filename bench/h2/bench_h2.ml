open Bench_harness
module Procs = Bench_server.Procs
module Idle_clients = Bench_scale.Idle_clients
module Peers = Bench_server.Peers

let name = "h2"

type transport = H2c | Tls

let transport_name = function H2c -> "h2c" | Tls -> "TLS"

(* The response sizes: a small file, where framing and HPACK dominate, and
   one of 64 KiB, four DATA frames past the default window of 65,535 bytes,
   where flow control and copying do. *)
let files = [ ("1 KiB", "1k.txt", 1024); ("64 KiB", "64k.bin", 65_536) ]
let connection_counts = [ 10; 100 ]
let stream_counts = [ 1; 10; 100 ]

(* {1 Files} *)

type setup = { root : string; cert : string; key : string }

(* The files where the peers' unprivileged workers can read them, and a
   self-signed P-256 certificate, made for the run. *)
let make_setup dir =
  let root = Filename.concat dir "www" and tls = Filename.concat dir "tls" in
  Sys.mkdir root 0o755;
  Sys.mkdir tls 0o700;
  List.iter
    (fun (_, file, bytes) ->
      let path = Filename.concat root file in
      Out_channel.with_open_bin path (fun oc ->
          output_string oc
            (String.init bytes (fun i -> Char.chr (97 + (i mod 26)))));
      Unix.chmod path 0o644)
    files;
  let cert = Filename.concat tls "cert.pem"
  and key = Filename.concat tls "key.pem" in
  Procs.self_signed_p256 ~cert ~key;
  { root; cert; key }

(* {1 The servers} *)

type server = Peers.server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

(* Room for the idle connections and the runs' own. *)
let idle_count ~quick = if quick then 1_000 else 5_000
let descriptors ~quick = idle_count ~quick + 512

(* [braid serve] with HTTP/2 on (its default), on [port] over [transport];
   over TLS its plain port is another, unused. *)
let start_braid setup transport ~port =
  let listen =
    match transport with
    | H2c -> [ "--port"; string_of_int port ]
    | Tls ->
        [
          "--port";
          string_of_int (Procs.free_port ());
          "--tls-port";
          string_of_int port;
          "--tls-cert";
          setup.cert;
          "--tls-key";
          setup.key;
        ]
  in
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      ([
         Peers.braid_binary ~experiment:name;
         "serve";
         "--domains";
         "1";
         "--host";
         "127.0.0.1";
         "--root";
         setup.root;
         "--keep-alive-timeout";
         "3600";
       ]
      @ listen)
      ~port
  in
  Some (proc, fun () -> Procs.stop proc)

let start_servers setup transport ~quick =
  let tls =
    match transport with H2c -> None | Tls -> Some (setup.cert, setup.key)
  in
  let connections = descriptors ~quick in
  Peers.start_all ~experiment:name
    [
      ("braid", start_braid setup transport);
      ( "h2o",
        fun ~port ->
          Peers.start_h2o ?tls ~connections ~cpu:Bench_server.server_cpu ~port
            ~root:setup.root () );
      ( "nginx",
        fun ~port ->
          Peers.start_nginx ?tls ~http2:true ~connections
            ~cpu:Bench_server.server_cpu ~port ~root:setup.root () );
    ]

let url transport s file =
  Printf.sprintf "%s://127.0.0.1:%d/%s"
    (match transport with H2c -> "http" | Tls -> "https")
    s.port file

(* {1 Measurements} *)

type cell = {
  transport : transport;
  connections : int;
  streams : int;
  size : string;
}

let cell_name label c =
  Printf.sprintf "%s, %s, %d conn x %d streams, %s" label
    (transport_name c.transport)
    c.connections c.streams c.size

type run = { rps : float; cpu_us : float }

let measure s ~url ~connections ~streams ~requests =
  let cpu0 = Procs.cpu_seconds s.proc in
  match
    H2load.run ~cpu:Bench_server.client_cpu ~connections ~streams ~requests url
  with
  | Ok r ->
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      Ok
        {
          rps = r.requests_per_second;
          cpu_us = cpu /. float r.succeeded *. 1e6;
        }
  | Error e -> Error e

(* As the scale benchmark (2,000 then 10,000): warm-up connections first (what a server sets up
   once is in the baseline), a wait past Braid's sweeper's ticks, then the
   idle connections and another wait. *)
let idle_memory s ~count =
  (* Fewer warm-up connections than idle ones: memory they left for reuse
     would otherwise hold all of the idle ones'. *)
  Idle_clients.rss_per_connection ~label:s.label
    ~rss:(fun () -> Procs.rss_bytes s.proc)
    ~open_idle:(fun ~count ->
      Idle_h2.open_idle ~port:s.port ~path:"/1k.txt" ~count)
    ~warm_up:(count / 5) ~count

(* {1 The experiment} *)

let cells =
  List.concat_map
    (fun transport ->
      List.concat_map
        (fun (size, _, _) ->
          List.concat_map
            (fun connections ->
              List.map
                (fun streams -> { transport; connections; streams; size })
                stream_counts)
            connection_counts)
        files)
    [ H2c; Tls ]

(* [servers] rotated by [k]: each round starts the turn with another. *)
let rotate k servers =
  let n = List.length servers in
  List.init n (fun i -> List.nth servers ((i + k) mod n))

let file_of size =
  match List.find_opt (fun (s, _, _) -> s = size) files with
  | Some (_, file, _) -> file
  | None -> invalid_arg "h2: size"

let run ~quick =
  let rounds = if quick then 1 else 3 in
  (* Runs of about a second (quick: a few tenths) here: a request count,
     not a time (see {!H2load.run}), scaled by each cell's rate. *)
  let requests c =
    let base =
      match (c.size, c.streams) with
      | "1 KiB", 1 -> 10_000
      | "1 KiB", _ -> 60_000
      | _, 1 -> 3_000
      | _ -> 6_000
    in
    if quick then base / 4 else base
  in
  let load = load_row "at start" in
  let dir = Peers.temp_dir "braid-bench-h2" in
  (* (label, cell) -> (round, outcome) list; label -> memory outcomes. *)
  let runs = Hashtbl.create 64 and memory = Hashtbl.create 4 in
  let record table key v =
    Hashtbl.replace table key
      (v :: Option.value (Hashtbl.find_opt table key) ~default:[])
  in
  let labels = ref [] in
  Fun.protect
    ~finally:(fun () ->
      Peers.remove_tree dir;
      Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      let setup = make_setup dir in
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      Procs.with_descriptor_limit (descriptors ~quick) (fun () ->
          for round = 1 to rounds do
            List.iter
              (fun transport ->
                let servers = start_servers setup transport ~quick in
                labels := List.map (fun s -> s.label) servers;
                Fun.protect
                  ~finally:(fun () -> Peers.stop_all servers)
                  (fun () ->
                    if transport = H2c then
                      List.iter
                        (fun s ->
                          progress "h2: round %d/%d, %s, %d idle connections"
                            round rounds s.label (idle_count ~quick);
                          let r = idle_memory s ~count:(idle_count ~quick) in
                          Result.iter_error (progress "h2: failed: %s") r;
                          record memory s.label r)
                        servers;
                    (* A short run of each first: the first connections'
                       costs (TLS contexts, buffers, page faults) stay out
                       of the figures. *)
                    List.iter
                      (fun s ->
                        ignore
                          (measure s ~url:(url transport s "1k.txt")
                             ~connections:100 ~streams:10 ~requests:10_000))
                      servers;
                    List.iter
                      (fun c ->
                        if c.transport = transport then
                          List.iter
                            (fun s ->
                              let r =
                                measure s
                                  ~url:(url transport s (file_of c.size))
                                  ~connections:c.connections ~streams:c.streams
                                  ~requests:(requests c)
                              in
                              (match r with
                              | Ok r ->
                                  progress "h2: %s: %.0f req/s, %.2f us/req"
                                    (cell_name s.label c) r.rps r.cpu_us
                              | Error e ->
                                  progress "h2: %s failed: %s"
                                    (cell_name s.label c) e);
                              record runs (s.label, c) (round, r))
                            (rotate (round - 1) servers))
                      cells))
              [ H2c; Tls ]
          done);
      let outcomes label c =
        List.map snd
          (Option.value (Hashtbl.find_opt runs (label, c)) ~default:[])
      in
      let rps label c = median_or_failed (fun r -> r.rps) (outcomes label c)
      and cpu label c =
        median_or_failed (fun r -> r.cpu_us) (outcomes label c)
      in
      let peers = List.filter (( <> ) "braid") !labels in
      (* Braid over the peer in each round alone: how far the median ratio
         can be trusted. *)
      let round_ratios peer c =
        let by_round label =
          List.filter_map
            (function round, Ok r -> Some (round, r.rps) | _, Error _ -> None)
            (Option.value (Hashtbl.find_opt runs (label, c)) ~default:[])
        in
        let braid = by_round "braid" and other = by_round peer in
        List.filter_map
          (fun (round, b) ->
            Option.map (fun o -> b /. o) (List.assoc_opt round other))
          braid
      in
      let cell_rows c =
        List.concat_map
          (fun label ->
            let n = cell_name label c in
            [
              row n "requests per second" (rps label c) "req/s";
              row n "server CPU per request" (cpu label c) "us";
            ]
            @ failed_row n (outcomes label c))
          !labels
        @ List.concat_map
            (fun peer ->
              let n = cell_name ("braid / " ^ peer) c in
              [
                row n "req/s ratio (above 1: Braid faster)"
                  (rps "braid" c /. rps peer c)
                  "x";
                row n "CPU per request ratio (below 1: Braid uses less)"
                  (cpu "braid" c /. cpu peer c)
                  "x";
              ]
              @
              match round_ratios peer c with
              | _ :: _ :: _ as ratios ->
                  [
                    row n "req/s ratio in the lowest round"
                      (List.fold_left Float.min infinity ratios)
                      "x";
                    row n "req/s ratio in the highest round"
                      (List.fold_left Float.max neg_infinity ratios)
                      "x";
                  ]
              | _ -> [])
            peers
      in
      let memory_rows =
        List.concat_map
          (fun label ->
            let outcomes =
              Option.value (Hashtbl.find_opt memory label) ~default:[]
            in
            let n =
              Printf.sprintf "%s, %d idle h2c connections" label
                (idle_count ~quick)
            in
            row n "RSS per idle connection"
              (median_or_failed Fun.id outcomes)
              "bytes"
            :: failed_row n outcomes)
          !labels
      in
      (load :: List.concat_map cell_rows cells)
      @ memory_rows
      @ [
          row "rounds" "fresh server processes per server and transport"
            (float rounds) "";
          row "h2load" "requests per run, 1 KiB, 10 or 100 streams"
            (float
               (requests
                  {
                    transport = H2c;
                    connections = 10;
                    streams = 10;
                    size = "1 KiB";
                  }))
            "";
          load_row "at end";
        ])

let experiment =
  {
    name;
    summary =
      "HTTP/2 with h2load: h2c and TLS, 10/100 connections x 1/10/100 streams, \
       1 KiB and 64 KiB files; req/s, server CPU per request and RSS per idle \
       connection, Braid vs h2o vs nginx (server on core 0, h2load on core 1)";
    run;
  }
