open Bench_harness
module Procs = Bench_server.Procs
module Wrk = Bench_server.Wrk
module Peers = Bench_server.Peers

(* The measured process (a proxy, a client) has core 0 to itself; the
   fixed parts (the upstream, wrk) share core 1. *)
let measured_cpu = 0
let fixed_cpu = 1
let small_body = "Hello, World!\n"
let large_size = 65536

(* The upstream's documents, in a directory nginx's worker can read. *)
let document_root () =
  let root = Peers.temp_dir "braid-bench-proxy-root" in
  let write name text =
    Out_channel.with_open_bin (Filename.concat root name) (fun oc ->
        output_string oc text)
  in
  write "small.txt" small_body;
  write "64k.bin" (String.init large_size (fun i -> Char.chr (i land 0xff)));
  Array.iter
    (fun f -> Unix.chmod (Filename.concat root f) 0o644)
    (Sys.readdir root);
  root

let with_upstream ~experiment f =
  let root = document_root () in
  let port = Procs.free_port () in
  match Peers.start_nginx ~cpu:fixed_cpu ~port ~root () with
  | None ->
      Peers.remove_tree root;
      failwith (experiment ^ ": nginx (the upstream) is not installed")
  | Some (_, stop) ->
      Fun.protect
        ~finally:(fun () ->
          stop ();
          Peers.remove_tree root)
        (fun () -> f ~port)

(* Median, and the spread over rounds as a share of it; [nan] both if a
   run failed. *)
let summary_of f runs =
  if failures runs > 0 then (nan, nan)
  else
    let values = List.map (fun r -> f (Result.get_ok r)) runs in
    let m = median values in
    let spread =
      (List.fold_left Float.max neg_infinity values
      -. List.fold_left Float.min infinity values)
      /. m *. 100.
    in
    (m, spread)

let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

(* {1 client} *)

let client_role = "braid-client"

(* N fibers on one loop, each a GET after the other until the deadline,
   every body read whole (as Go's io.Copy to io.Discard). *)
let run_client ~url ~connections ~seconds =
  let requests = ref 0 and failure = ref None in
  Braid_io.run (fun () ->
      Braid.Switch.run (fun sw ->
          let client =
            Braid_client.create ~sw
              ~config:
                {
                  Braid_client.default_config with
                  max_connections = connections;
                  max_idle = connections;
                  redirects = Never;
                }
              ()
          in
          let deadline =
            Braid_io.Time.now_ns () + Float.to_int (seconds *. 1e9)
          in
          let one buf =
            Braid_client.request client GET url (fun r ->
                let rec drain () =
                  match
                    Braid_client.Response.read r buf 0 (Bytes.length buf)
                  with
                  | Ok 0 -> Ok (Braid_client.Response.status r)
                  | Ok _ -> drain ()
                  | Error e -> Error e
                in
                drain ())
          in
          for _ = 1 to connections do
            ignore
              (Braid.Switch.fork sw (fun () ->
                   let buf = Bytes.create 16384 in
                   while
                     !failure = None && Braid_io.Time.now_ns () < deadline
                   do
                     match one buf with
                     | Ok (Ok 200) -> incr requests
                     | Ok (Ok status) ->
                         failure := Some (Printf.sprintf "status %d" status)
                     | Ok (Error e) | Error e ->
                         failure := Some (Braid_client.Error.to_string e)
                   done))
          done));
  let t = Unix.times () in
  match !failure with
  | Some m ->
      prerr_endline ("braid-client: " ^ m);
      exit 1
  | None ->
      Printf.printf "%d %.6f\n%!" !requests (t.tms_utime +. t.tms_stime);
      exit 0

let dispatch () =
  match Sys.getenv_opt "BRAID_BENCH_ROLE" with
  | Some r when r = client_role ->
      let env name =
        match Sys.getenv_opt name with
        | Some v -> v
        | None -> failwith ("braid-client: " ^ name ^ " is not set")
      in
      run_client ~url:(env "BRAID_BENCH_URL")
        ~connections:(int_of_string (env "BRAID_BENCH_CONNECTIONS"))
        ~seconds:(float_of_string (env "BRAID_BENCH_SECONDS"))
  | _ -> ()

let go_client () =
  let dir =
    Filename.concat
      (Filename.dirname (Filename.dirname (results_dir ())))
      "bench/peers/_build"
  in
  let binary = Filename.concat dir "client-go" in
  if Sys.file_exists binary then
    let version =
      try
        String.trim
          (In_channel.with_open_text (binary ^ ".version") In_channel.input_all)
      with Sys_error _ -> "go net/http"
    in
    Some (binary, version)
  else None

type client_run = { requests_per_second : float; cpu_us : float }

(* One timed run of a client process pinned to the measured core; its last
   line is "REQUESTS CPU_SECONDS". *)
let run_process ~label argv ~seconds =
  let argv = [ "taskset"; "-c"; string_of_int measured_cpu ] @ argv in
  let ic = Unix.open_process_args_in "taskset" (Array.of_list argv) in
  let output = In_channel.input_all ic in
  match
    (Unix.close_process_in ic, String.split_on_char ' ' (String.trim output))
  with
  | WEXITED 0, [ requests; cpu ] ->
      let requests = float_of_string requests in
      {
        requests_per_second = requests /. seconds;
        cpu_us = float_of_string cpu /. requests *. 1e6;
      }
  | _ ->
      failwith
        (Printf.sprintf "client: %s failed (see its stderr above): %S" label
           output)

let run_client_experiment ~quick =
  let load = load_row "at start" in
  let seconds = if quick then 2. else 5. and rounds = if quick then 1 else 5 in
  let concurrencies = [ 1; 50 ] in
  let go = go_client () in
  if go = None then
    progress
      "client: bench/peers/_build/client-go is not built \
       (bench/peers/build-client.sh): Braid alone";
  with_upstream ~experiment:"client" @@ fun ~port ->
  let url = Printf.sprintf "http://127.0.0.1:%d/small.txt" port in
  let braid connections seconds =
    Procs.self_role_argv ()
    |> List.append
         [
           "env";
           "BRAID_BENCH_ROLE=" ^ client_role;
           "BRAID_BENCH_URL=" ^ url;
           Printf.sprintf "BRAID_BENCH_CONNECTIONS=%d" connections;
           Printf.sprintf "BRAID_BENCH_SECONDS=%g" seconds;
         ]
  in
  let contenders =
    ("braid_client", braid)
    ::
    (match go with
    | Some (binary, _) ->
        [
          ( "go net/http",
            fun connections seconds ->
              [
                binary;
                url;
                string_of_int connections;
                Printf.sprintf "%g" seconds;
              ] );
        ]
    | None -> [])
  in
  let results = Hashtbl.create 8 in
  for round = 1 to rounds do
    let order = if round mod 2 = 0 then List.rev contenders else contenders in
    List.iter
      (fun connections ->
        List.iter
          (fun (label, argv) ->
            progress "client: round %d/%d, %s, %d connections" round rounds
              label connections;
            ignore (run_process ~label (argv connections 0.5) ~seconds:0.5);
            record results (label, connections)
              (Ok (run_process ~label (argv connections seconds) ~seconds)))
          order)
      concurrencies
  done;
  let rows =
    List.concat_map
      (fun connections ->
        List.concat_map
          (fun (label, _) ->
            let runs = Hashtbl.find results (label, connections) in
            let name = Printf.sprintf "%s, %d connections" label connections in
            let rps, rps_spread =
              summary_of (fun (r : client_run) -> r.requests_per_second) runs
            and cpu, cpu_spread =
              summary_of (fun (r : client_run) -> r.cpu_us) runs
            in
            [
              row name "requests per second" rps "req/s";
              row name "requests per second, spread (max-min)" rps_spread "%";
              row name "client CPU per request" cpu "us";
              row name "client CPU per request, spread (max-min)" cpu_spread "%";
            ])
          contenders
        @
        match go with
        | None -> []
        | Some _ ->
            let m label f =
              median_or_failed f (Hashtbl.find results (label, connections))
            in
            [
              ratio
                (Printf.sprintf "braid / go, %d connections (req/s)" connections)
                (m "braid_client" (fun r -> r.requests_per_second)
                /. m "go net/http" (fun r -> r.requests_per_second));
              ratio
                (Printf.sprintf "go / braid, %d connections (CPU per request)"
                   connections)
                (m "go net/http" (fun r -> r.cpu_us)
                /. m "braid_client" (fun r -> r.cpu_us));
            ])
      concurrencies
  in
  (load :: rows)
  @ (match go with
    | Some (_, version) -> [ row ("peer: " ^ version) "built" 1. "" ]
    | None -> [])
  @ [
      row "rounds" "runs per client and concurrency" (float rounds) "";
      load_row "at end";
    ]

let client =
  {
    name = "client";
    summary =
      "braid_client vs Go net/http client: GETs of a small file from nginx \
       (core 1), 1 and 50 keep-alive connections, client on core 0; req/s and \
       client CPU per request";
    run = run_client_experiment;
  }

(* {1 proxy} *)

let nginx_proxy_config ~upstream ~port dir =
  Printf.sprintf
    {|worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log %s/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fastcgi;
  uwsgi_temp_path %s/uwsgi;
  scgi_temp_path %s/scgi;
  upstream backend {
    server 127.0.0.1:%d;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:%d;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffers 16 8k;
      proxy_busy_buffers_size 64k;
    }
  }
}
|}
    dir dir dir dir dir dir dir upstream port

let haproxy_config ~upstream ~port _dir =
  Printf.sprintf
    {|global
  nbthread 1
  maxconn 4096
defaults
  mode http
  option http-keep-alive
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend front
  bind 127.0.0.1:%d
  default_backend back
backend back
  server up 127.0.0.1:%d
|}
    port upstream

let braid_proxy ~upstream ~port =
  let dir = Peers.temp_dir "braid-bench-proxy" in
  let conf = Filename.concat dir "braid.conf" in
  Out_channel.with_open_text conf (fun oc ->
      Printf.fprintf oc "ProxyPass / http://127.0.0.1:%d\n" upstream);
  let braid = Peers.braid_binary ~experiment:"proxy" in
  match
    Procs.spawn ~cpu:measured_cpu ~name:"braid-proxy"
      [ braid; "serve"; "-p"; string_of_int port; "--config"; conf ]
      ~port
  with
  | p ->
      Some
        ( p,
          fun () ->
            Procs.stop p;
            Peers.remove_tree dir )
  | exception e ->
      Peers.remove_tree dir;
      raise e

(* One thread, as the others; upstream connections are kept alive by
   default (proxy.timeout.keepalive, 2 s idle). *)
let h2o_proxy_config ~upstream ~port _dir =
  Printf.sprintf
    {|num-threads: 1
max-connections: 4096
http1-request-timeout: 3600
listen:
  host: 127.0.0.1
  port: %d
hosts:
  default:
    paths:
      /:
        proxy.reverse.url: http://127.0.0.1:%d/
|}
    port upstream

let proxies ~upstream =
  [
    ("braid serve", fun ~port -> braid_proxy ~upstream ~port);
    ( "nginx",
      fun ~port ->
        Peers.start_in_temp_dir ~name:"nginx"
          ~paths:[ "/usr/sbin/nginx"; "/usr/bin/nginx" ] ~cpu:measured_cpu ~port
          ~config:(nginx_proxy_config ~upstream ~port)
          ~argv:(fun dir nginx conf ->
            [ nginx; "-e"; dir ^ "/error.log"; "-p"; dir; "-c"; conf ]) );
    ( "haproxy",
      fun ~port ->
        Peers.start_in_temp_dir ~name:"haproxy"
          ~paths:[ "/usr/sbin/haproxy"; "/usr/bin/haproxy" ]
          ~cpu:measured_cpu ~port ~config:(haproxy_config ~upstream ~port)
          ~argv:(fun _ haproxy conf -> [ haproxy; "-db"; "-f"; conf ]) );
    ( "h2o",
      fun ~port ->
        Peers.start_in_temp_dir ~name:"h2o"
          ~paths:[ "/usr/bin/h2o"; "/usr/sbin/h2o" ] ~cpu:measured_cpu ~port
          ~config:(h2o_proxy_config ~upstream ~port) ~argv:(fun _ h2o conf ->
            [ h2o; "-c"; conf ]) );
  ]

let peers = [ "nginx"; "haproxy"; "h2o" ]

type proxy_run = { wrk : Wrk.result; cpu_us : float }

let run_proxy_experiment ~quick =
  let load = load_row "at start" in
  let seconds = if quick then 1 else 5 and rounds = if quick then 1 else 3 in
  let sweep = [ 10; 100; 1000 ] in
  let documents =
    [
      ("small", "/small.txt", String.length small_body);
      ("64 KiB", "/64k.bin", large_size);
    ]
  in
  with_upstream ~experiment:"proxy" @@ fun ~port:upstream ->
  let results = Hashtbl.create 8 and labels = ref [] in
  for round = 1 to rounds do
    let servers = Peers.start_all ~experiment:"proxy" (proxies ~upstream) in
    Fun.protect ~finally:(fun () -> Peers.stop_all servers) @@ fun () ->
    labels := List.map (fun (s : Peers.server) -> s.label) servers;
    (* Each proxy passes both documents on whole before it is measured. *)
    List.iter
      (fun (s : Peers.server) ->
        List.iter
          (fun (_, path, size) ->
            match Procs.get ~port:s.port path with
            | 200, body when String.length body = size -> ()
            | status, body ->
                failwith
                  (Printf.sprintf "proxy: %s %s gave %d, %d bytes" s.label path
                     status (String.length body)))
          documents)
      servers;
    let order = if round mod 2 = 0 then List.rev servers else servers in
    List.iter
      (fun connections ->
        List.iter
          (fun (document, path, _) ->
            List.iter
              (fun (s : Peers.server) ->
                let url = Printf.sprintf "http://127.0.0.1:%d%s" s.port path in
                progress "proxy: round %d/%d, %s, %s, %d connections (%d s)"
                  round rounds s.label document connections seconds;
                (* A run wrk saw an error in fails its cell (the table says
                   so), not the whole experiment. *)
                let run () =
                  ignore (Wrk.run ~cpu:fixed_cpu ~connections ~seconds:1 url);
                  let cpu0 = Procs.cpu_seconds s.proc in
                  let wrk = Wrk.run ~cpu:fixed_cpu ~connections ~seconds url in
                  let cpu = Procs.cpu_seconds s.proc -. cpu0 in
                  { wrk; cpu_us = cpu /. float wrk.requests *. 1e6 }
                in
                record results
                  (s.label, document, connections)
                  (match run () with
                  | r -> Ok r
                  | exception Failure why ->
                      progress "proxy: %s, %s, %d connections: %s" s.label
                        document connections why;
                      Error why))
              order)
          documents)
      sweep
  done;
  let labels = !labels in
  let m label document connections f =
    median_or_failed f (Hashtbl.find results (label, document, connections))
  in
  let rows =
    List.concat_map
      (fun connections ->
        List.concat_map
          (fun (document, _, _) ->
            List.concat_map
              (fun label ->
                let runs =
                  Hashtbl.find results (label, document, connections)
                in
                let name =
                  Printf.sprintf "%s, %s, %d connections" label document
                    connections
                in
                let rps, rps_spread =
                  summary_of
                    (fun (r : proxy_run) -> r.wrk.requests_per_second)
                    runs
                and cpu, cpu_spread =
                  summary_of (fun (r : proxy_run) -> r.cpu_us) runs
                in
                failed_row name runs
                @ [
                    row name "requests per second" rps "req/s";
                    row name "requests per second, spread (max-min)" rps_spread
                      "%";
                    row name "latency p99"
                      (median_or_failed (fun r -> r.wrk.p99_ms) runs)
                      "ms";
                    row name "proxy CPU per request" cpu "us";
                    row name "proxy CPU per request, spread (max-min)"
                      cpu_spread "%";
                  ])
              labels
            @ List.concat_map
                (fun peer ->
                  if List.mem peer labels then
                    [
                      ratio
                        (Printf.sprintf "braid / %s, %s, %d connections (req/s)"
                           peer document connections)
                        (m "braid serve" document connections (fun r ->
                             r.wrk.requests_per_second)
                        /. m peer document connections (fun r ->
                               r.wrk.requests_per_second));
                      ratio
                        (Printf.sprintf
                           "%s / braid, %s, %d connections (proxy CPU per \
                            request)"
                           peer document connections)
                        (m peer document connections (fun r -> r.cpu_us)
                        /. m "braid serve" document connections (fun r ->
                               r.cpu_us));
                    ]
                  else [])
                peers)
          documents)
      sweep
  in
  (load :: rows)
  @ [
      row "rounds"
        "fresh proxy processes, runs per proxy, document and connections"
        (float rounds) "";
      row "wrk" "seconds per run (after 1 s of warm-up)" (float seconds) "";
      load_row "at end";
    ]

let proxy =
  {
    name = "proxy";
    summary =
      "wrk -> proxy -> nginx upstream: braid serve (ProxyPass) vs nginx \
       proxy_pass vs haproxy vs h2o proxy.reverse.url, keep-alive, a small \
       file and 64 KiB, 10, 100 and 1,000 connections; req/s and proxy CPU per \
       request (proxy on core 0)";
    run = run_proxy_experiment;
  }
