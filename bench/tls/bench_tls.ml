open Bench_harness
module Procs = Bench_server.Procs
module Wrk = Bench_server.Wrk
module Peers = Bench_server.Peers

let experiment_name = "tls"
let file = "1k.bin"
let size = 1024

(* Bytes no two positions of a period share, as bench/static's files. *)
let content =
  String.init size (fun i -> Char.chr (((i * 7) + (i / 251)) land 255))

(* Connections of the full-handshake client: enough to keep a server busy
   while the client waits for the others. *)
let handshake_connections = 16

(* wrk's keep-alive connections, as bench/static. *)
let keep_alive_connections = 100

(* {1 The certificate and the files} *)

type files = { root : string; cert : string; key : string }

let run_quietly = Procs.run_quietly

(* A self-signed ECDSA P-256 certificate for 127.0.0.1, made afresh for
   the run; the document root beside it, where nginx's unprivileged worker
   can read it. The key stays readable by its owner alone: both servers'
   processes that load it run as the user of this benchmark. *)
let make_files dir =
  let root = Filename.concat dir "www" and tls = Filename.concat dir "tls" in
  Sys.mkdir root 0o755;
  Sys.mkdir tls 0o700;
  let cert = Filename.concat tls "cert.pem"
  and key = Filename.concat tls "key.pem" in
  Procs.self_signed_p256 ~cert ~key;
  let path = Filename.concat root file in
  Out_channel.with_open_bin path (fun oc -> output_string oc content);
  Unix.chmod path 0o644;
  { root; cert; key }

(* {1 The servers} *)

type server = Peers.server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

(* [braid serve], HTTPS on [port] beside plain HTTP on [plain]. [metrics]:
   its metrics (with their count of full and resumed handshakes) on
   [/metrics] of the plain port, for the checks; off when measuring, as
   they time every request. *)
let start_braid ?(metrics = false) files ~plain ~port =
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      ([
         Peers.braid_binary ~experiment:experiment_name;
         "serve";
         "--domains";
         "1";
         "--host";
         "127.0.0.1";
         "--port";
         string_of_int plain;
         "--root";
         files.root;
         "--tls-port";
         string_of_int port;
         "--tls-cert";
         files.cert;
         "--tls-key";
         files.key;
         "--keep-alive-timeout";
         "3600";
       ]
      @ if metrics then [ "--metrics"; "/metrics" ] else [])
      ~port
  in
  Some (proc, fun () -> Procs.stop proc)

(* Peers' nginx with TLS on its one listener; [log]: an access log of each
   connection's resumption, protocol, cipher and group, for the checks; off
   when measuring. *)
let start_nginx ?log files ~port =
  Peers.start_nginx ~tls:(files.cert, files.key)
    ?log:
      (Option.map
         (fun path ->
           ( "$ssl_session_reused $connection_requests $ssl_protocol \
              $ssl_cipher $ssl_curve $status",
             path ))
         log)
    ~cpu:Bench_server.server_cpu ~port ~root:files.root ()

(* Braid, then nginx. Braid's server failing to start (its TLS options not
   there yet, a certificate it rejects) is Braid's failed runs, not the
   end of the experiment: [Error] with what it said. *)
let start_servers files =
  let braid =
    match
      Peers.start_all ~experiment:experiment_name
        [ ("braid", start_braid files ~plain:(Procs.free_port ())) ]
    with
    | servers -> Ok servers
    | exception Failure msg -> Error msg
  in
  let nginx =
    match
      Peers.start_all ~experiment:experiment_name
        [ ("nginx", fun ~port -> start_nginx files ~port) ]
    with
    | servers -> servers
    | exception e ->
        Result.iter Peers.stop_all braid;
        raise e
  in
  (braid, nginx)

(* {1 Checks} *)

(* The body of GET /1k.bin over TLS 1.3, by curl. *)
let fetch ~port =
  run_quietly
    [
      "curl";
      "-sSk";
      "--tlsv1.3";
      "--max-time";
      "5";
      Printf.sprintf "https://127.0.0.1:%d/%s" port file;
    ]

let serves_the_file s =
  match fetch ~port:s.port with
  | body when body = content -> Ok ()
  | body ->
      Error
        (Printf.sprintf "%s: /%s gave %d bytes, not the file" s.label file
           (String.length body))
  | exception Failure msg -> Error msg

(* What [openssl s_client] (OpenSSL's default client settings, as the load
   generators') negotiates: protocol, ciphersuite, key exchange group and
   signature. *)
let negotiated ~port =
  let out =
    run_quietly
      [
        "sh";
        "-c";
        Printf.sprintf
          "openssl s_client -connect 127.0.0.1:%d -brief </dev/null" port;
      ]
  in
  let field name =
    List.find_map
      (fun line ->
        match String.index_opt line ':' with
        | Some i when String.trim (String.sub line 0 i) = name ->
            Some
              (String.trim
                 (String.sub line (i + 1) (String.length line - i - 1)))
        | _ -> None)
      (String.split_on_char '\n' out)
  in
  let get name = Option.value (field name) ~default:"?" in
  Printf.sprintf "%s, %s, %s, %s" (get "Protocol version") (get "Ciphersuite")
    (get "Negotiated TLS1.3 group")
    (get "Signature type")

(* nginx 1.22, built against OpenSSL 3.0, names the hybrid group by number. *)
let group_name = function "0x11ec" -> "X25519MLKEM768" | g -> g

(* {2 Full handshakes, seen from nginx's access log} *)

type logged = {
  lines : int;
  resumed : int;
  first : int;  (** Requests that were their connection's first. *)
  kinds : (string * int) list;
}

let read_log path ~from =
  let lines =
    match In_channel.with_open_text path In_channel.input_all with
    | s -> List.filter (( <> ) "") (String.split_on_char '\n' s)
    | exception Sys_error _ -> []
  in
  let fresh = List.filteri (fun i _ -> i >= from) lines in
  let kinds = Hashtbl.create 4 in
  let resumed = ref 0 and first = ref 0 in
  List.iter
    (fun line ->
      match String.split_on_char ' ' line with
      | reused :: nth :: protocol :: cipher :: group :: status :: _ ->
          let kind =
            Printf.sprintf "%s, %s, %s, status %s" protocol cipher
              (group_name group) status
          in
          Hashtbl.replace kinds kind
            (1 + Option.value (Hashtbl.find_opt kinds kind) ~default:0);
          if reused = "r" then incr resumed;
          if nth = "1" then incr first
      | _ -> ())
    fresh;
  ( List.length lines,
    {
      lines = List.length fresh;
      resumed = !resumed;
      first = !first;
      kinds = List.of_seq (Hashtbl.to_seq kinds);
    } )

(* wrk with Connection: close, for the record: it reconnects after each
   response, resuming the session it was given. *)
let wrk_close ~port ~seconds =
  ignore
    (Sys.command
       (Printf.sprintf
          "taskset -c %d wrk -t1 -c8 -d%ds -H 'Connection: close' \
           https://127.0.0.1:%d/%s >/dev/null 2>&1"
          Bench_server.client_cpu seconds port file))

(* A client's last connections, cut when it stops, reach the server's log
   or counts a moment later: wait for them before reading, not to count
   them as the next client's. *)
let settle () = Unix.sleepf 0.2

(* The clients checked: this experiment's handshake client (which must
   neither resume a session nor reuse a connection), wrk with Connection:
   close (which resumes, and is why it is not used) and (unless [quick])
   wrk over keep-alive connections, each for [seconds] against
   127.0.0.1:[port]. *)
let checked_clients ~quick ~port ~seconds =
  [
    ( "full-handshake client",
      fun () ->
        let r =
          Handshakes.run ~connections:4 ~seconds:(float seconds) ~port
            ~path:("/" ^ file) ~size
        in
        if r.errors > 0 then
          progress "tls: check: %d failed connections (%s)" r.errors
            (Option.value r.first_error ~default:"") );
    ("wrk -H 'Connection: close' (not used)", fun () -> wrk_close ~port ~seconds);
    ( "wrk keep-alive",
      fun () ->
        match
          Wrk.run ~cpu:Bench_server.client_cpu ~connections:4 ~seconds
            (Printf.sprintf "https://127.0.0.1:%d/%s" port file)
        with
        | _ -> ()
        | exception Failure msg -> progress "tls: check: %s" msg );
  ]
  |> List.filteri (fun i _ -> i < if quick then 2 else 3)

(* An nginx with the access log on: each client's requests, how many were
   the first on their connection, how many sessions were resumed, and what
   was negotiated. Returns rows, and whether the handshake client resumed
   no session and sent each request on a new connection. *)
let check_nginx ~quick files ~seconds =
  let dir = Peers.temp_dir "braid-bench-tls-log" in
  let log = Filename.concat dir "access.log" in
  let port = Procs.free_port () in
  match start_nginx ~log files ~port with
  | None ->
      Peers.remove_tree dir;
      ([], None)
  | Some (_, stop) ->
      Fun.protect
        ~finally:(fun () ->
          stop ();
          Peers.remove_tree dir)
        (fun () ->
          let seen = ref 0 in
          let results =
            List.map
              (fun (who, run) ->
                run ();
                settle ();
                let total, l = read_log log ~from:!seen in
                seen := total;
                (who, l))
              (checked_clients ~quick ~port ~seconds)
          in
          let rows (who, (l : logged)) =
            let name = "check (nginx access log): " ^ who in
            [
              row name "requests logged" (float l.lines) "";
              row name "requests first on their connection" (float l.first) "";
              row name "sessions resumed" (float l.resumed) "";
            ]
            @ List.map
                (fun (kind, n) ->
                  row (name ^ ": " ^ kind) "requests logged" (float n) "")
                l.kinds
          in
          let ours = snd (List.hd results) in
          ( List.concat_map rows results,
            Some (ours.lines > 0 && ours.resumed = 0 && ours.first = ours.lines)
          ))

(* Braid's count of TLS handshakes by outcome, from its metrics. *)
let braid_handshakes ~plain =
  match Procs.get ~port:plain "/metrics" with
  | 200, body -> (
      let count outcome =
        let prefix =
          Printf.sprintf "braid_tls_handshakes_total{outcome=%S} " outcome
        in
        List.find_map
          (fun line ->
            if String.starts_with ~prefix line then
              float_of_string_opt
                (String.sub line (String.length prefix)
                   (String.length line - String.length prefix))
            else None)
          (String.split_on_char '\n' body)
      in
      match (count "full", count "resumed", count "failed") with
      | Some full, Some resumed, Some failed -> Some (full, resumed, failed)
      | _ -> None)
  | _ -> None

(* A braid serve with its metrics on: each client's full, resumed and
   failed handshakes as Braid counted them (a client cuts the connections
   still in their handshake when its run ends: a few failed ones). Returns
   rows, and whether the handshake client's were all full. *)
let check_braid ~quick files ~seconds =
  let plain = Procs.free_port () and port = Procs.free_port () in
  match start_braid ~metrics:true files ~plain ~port with
  | exception Failure msg ->
      progress "tls: check: braid did not start: %s" msg;
      ([], None)
  | None -> ([], None)
  | Some (_, stop) ->
      Fun.protect ~finally:stop (fun () ->
          let results =
            List.map
              (fun (who, run) ->
                let before = braid_handshakes ~plain in
                run ();
                settle ();
                let after = braid_handshakes ~plain in
                match (before, after) with
                | Some (f0, r0, x0), Some (f1, r1, x1) ->
                    (who, Some (f1 -. f0, r1 -. r0, x1 -. x0))
                | _ ->
                    progress
                      "tls: check: no handshake counts in braid's metrics";
                    (who, None))
              (checked_clients ~quick ~port ~seconds)
          in
          let rows = function
            | who, Some (full, resumed, failed) ->
                let name = "check (braid metrics): " ^ who in
                [
                  row name "full handshakes" full "";
                  row name "resumed handshakes" resumed "";
                  row name "failed handshakes" failed "";
                ]
            | _, None -> []
          in
          ( List.concat_map rows results,
            match snd (List.hd results) with
            | Some (full, resumed, _) -> Some (full > 0. && resumed = 0.)
            | None -> None ))

(* Both checks. The handshake client passes unless one of them saw it
   resume a session or reuse a connection. *)
let check_clients ~quick files ~seconds =
  let nginx_rows, nginx_ok = check_nginx ~quick files ~seconds in
  let braid_rows, braid_ok = check_braid ~quick files ~seconds in
  ( nginx_rows @ braid_rows,
    List.for_all (fun ok -> ok <> Some false) [ nginx_ok; braid_ok ] )

(* {1 Measurements} *)

type run = {
  per_second : float;  (** Handshakes or requests. *)
  cpu_us : float;  (** Server CPU per handshake or request. *)
  server_busy : float;  (** Server CPU over the run, % of one core. *)
  client_busy : float;  (** Load generator's CPU likewise. *)
}

let children_cpu () =
  let t = Unix.times () in
  t.tms_cutime +. t.tms_cstime

(* New connections, each a full handshake and one GET. *)
let handshakes s ~seconds =
  let cpu0 = Procs.cpu_seconds s.proc in
  let r =
    Handshakes.run ~connections:handshake_connections ~seconds:(float seconds)
      ~port:s.port ~path:("/" ^ file) ~size
  in
  let cpu = Procs.cpu_seconds s.proc -. cpu0 in
  if r.errors > 0 then
    Error
      (Printf.sprintf "%d failed connections (first: %s)" r.errors
         (Option.value r.first_error ~default:"?"))
  else if r.completed = 0 then Error "no connection completed"
  else
    Ok
      {
        per_second = Handshakes.handshakes_per_second r;
        cpu_us = cpu /. float r.completed *. 1e6;
        server_busy = cpu /. r.seconds *. 100.;
        client_busy = r.client_cpu /. r.seconds *. 100.;
      }

(* Keep-alive GETs by wrk; any error fails the run. *)
let keep_alive s ~seconds =
  let cpu0 = Procs.cpu_seconds s.proc and client0 = children_cpu () in
  match
    Wrk.run ~cpu:Bench_server.client_cpu ~connections:keep_alive_connections
      ~seconds
      (Printf.sprintf "https://127.0.0.1:%d/%s" s.port file)
  with
  | wrk ->
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      Ok
        {
          per_second = wrk.requests_per_second;
          cpu_us = cpu /. float wrk.requests *. 1e6;
          server_busy = cpu /. float seconds *. 100.;
          client_busy = (children_cpu () -. client0) /. float seconds *. 100.;
        }
  | exception Failure msg -> Error msg

type workload = {
  title : string;  (** For the rows' names. *)
  unit_ : string;  (** What [per_second] counts. *)
  op : string;  (** One of them, for CPU per op. *)
  measure : server -> seconds:int -> (run, string) result;
}

let workloads =
  [
    {
      title = "full handshakes";
      unit_ = "handshakes/s";
      op = "handshake";
      measure = handshakes;
    };
    {
      title = "keep-alive 1 KiB GETs";
      unit_ = "req/s";
      op = "request";
      measure = keep_alive;
    };
  ]

let labels = [ "braid"; "nginx" ]

let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

(* One round: the servers afresh, each checked and (in a full run) warmed
   up, then each workload in turn, the servers taking turns at each. A
   server that did not start or does not serve the file has its runs of
   the round failed with the reason. *)
let run_round tally negotiations ~round ~rounds ~files ~seconds ~warm_up =
  let braid, nginx = start_servers files in
  let started = (match braid with Ok b -> b | Error _ -> []) @ nginx in
  Fun.protect
    ~finally:(fun () -> Peers.stop_all started)
    (fun () ->
      let broken = Hashtbl.create 2 in
      (match braid with
      | Ok _ -> ()
      | Error msg ->
          progress "tls: braid did not start: %s" msg;
          Hashtbl.replace broken "braid" ("did not start: " ^ msg));
      List.iter
        (fun s ->
          match serves_the_file s with
          | Ok () ->
              if not (Hashtbl.mem negotiations s.label) then
                Hashtbl.replace negotiations s.label
                  (try negotiated ~port:s.port with Failure _ -> "unknown")
          | Error msg ->
              progress "tls: %s" msg;
              Hashtbl.replace broken s.label msg)
        started;
      let ready =
        List.filter (fun s -> not (Hashtbl.mem broken s.label)) started
      in
      Option.iter
        (fun seconds ->
          List.iter
            (fun s ->
              progress "tls: round %d/%d, warming up %s" round rounds s.label;
              List.iter
                (fun w ->
                  Result.iter_error
                    (progress "tls: warm-up failed: %s")
                    (w.measure s ~seconds))
                workloads)
            ready)
        warm_up;
      List.iter
        (fun w ->
          List.iter
            (fun label ->
              match
                ( Hashtbl.find_opt broken label,
                  List.find_opt (fun s -> s.label = label) ready )
              with
              | Some msg, _ -> record tally (label, w.title) (Error msg)
              | None, None -> ()
              | None, Some s ->
                  progress "tls: round %d/%d, %s, %s (%d s)" round rounds label
                    w.title seconds;
                  let r = w.measure s ~seconds in
                  Result.iter_error (progress "tls: failed: %s") r;
                  record tally (label, w.title) r)
            labels)
        workloads)

let figures tally =
  List.concat_map
    (fun w ->
      let runs label =
        Option.value (Hashtbl.find_opt tally (label, w.title)) ~default:[]
      in
      let present = List.filter (fun l -> runs l <> []) labels in
      let median label f = median_or_failed f (runs label) in
      List.concat_map
        (fun label ->
          let name = Printf.sprintf "%s, %s" label w.title in
          [
            row name (w.unit_ ^ " (median)")
              (median label (fun r -> r.per_second))
              w.unit_;
            row name ("server CPU per " ^ w.op)
              (median label (fun r -> r.cpu_us))
              "us";
            row name "server CPU busy"
              (median label (fun r -> r.server_busy))
              "%";
            row name "load generator CPU busy"
              (median label (fun r -> r.client_busy))
              "%";
          ]
          @ failed_row name (runs label))
        present
      @
      if List.mem "braid" present && List.mem "nginx" present then
        [
          ratio
            (Printf.sprintf "braid / nginx %s, %s" w.unit_ w.title)
            (median "braid" (fun r -> r.per_second)
            /. median "nginx" (fun r -> r.per_second));
          ratio
            (Printf.sprintf
               "braid / nginx server CPU per %s (below 1: Braid uses less)" w.op)
            (median "braid" (fun r -> r.cpu_us)
            /. median "nginx" (fun r -> r.cpu_us));
        ]
      else [])
    workloads

let run ~quick =
  let rounds = if quick then 1 else 3
  and seconds = if quick then 1 else 5
  and warm_up = if quick then None else Some 1 in
  let start = load_row "at start" in
  let dir = Peers.temp_dir "braid-bench-tls" in
  Fun.protect
    ~finally:(fun () ->
      Peers.remove_tree dir;
      Procs.pin_self (Procs.cpu_list_all ()))
    (fun () ->
      let files = make_files dir in
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      let checks, full = check_clients ~quick files ~seconds:1 in
      if not full then
        progress
          "tls: the handshake client resumed sessions or reused connections in \
           the nginx log check: its runs fail";
      let tally = Hashtbl.create 8 and negotiations = Hashtbl.create 2 in
      List.iter
        (fun round ->
          run_round tally negotiations ~round ~rounds ~files ~seconds ~warm_up)
        (List.init rounds succ);
      if not full then
        List.iter
          (fun label ->
            Hashtbl.replace tally (label, "full handshakes")
              [ Error "the client resumed sessions or reused connections" ])
          labels;
      (start :: figures tally)
      @ List.map
          (fun label ->
            row
              (Printf.sprintf "%s: openssl s_client negotiated %s" label
                 (Hashtbl.find negotiations label))
              "checked" 1. "")
          (List.filter (Hashtbl.mem negotiations) labels)
      @ checks
      @ [
          row "rounds" "fresh server processes per server" (float rounds) "";
          row "runs" "seconds per run" (float seconds) "s";
          row "full handshakes" "connections at once"
            (float handshake_connections)
            "";
          row "keep-alive (wrk)" "connections" (float keep_alive_connections) "";
          load_row "at end";
        ])

let experiment =
  {
    name = experiment_name;
    summary =
      "HTTPS (TLS 1.3, ECDSA P-256): full handshakes per second (a new \
       connection and TLS session per GET) and keep-alive 1 KiB GETs with wrk; \
       server CPU per handshake and per request, Braid vs nginx, one worker \
       each (server on core 0, clients on core 1)";
    run;
  }

module Handshakes = Handshakes
