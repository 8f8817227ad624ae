(* The configuration files and document roots go in a directory under the
   temporary directory, made traversable: started as root, nginx's worker
   and h2o switch to an unprivileged user (nobody), which must reach them. *)
let temp_dir prefix =
  let dir = Filename.temp_dir prefix "" in
  Unix.chmod dir 0o755;
  dir

let remove_tree dir = ignore (Sys.command ("rm -rf " ^ Filename.quote dir))
let binary candidates = List.find_opt Sys.file_exists candidates

(* {1 nginx} *)

(* The defaults but for what the comparisons need: one worker, no access
   log, files from [root]; keepalive_requests raised so that nginx, like
   Braid, never closes a keep-alive connection during a run. [connections]:
   room for that many connections, in descriptors too, and keep-alive
   connections left idle for as long as a run lasts. *)
let nginx_config ~dir ~port ~root ~backlog ~connections ~sendfile ~tls ~log
    ~http2 =
  let types =
    if Sys.file_exists "/etc/nginx/mime.types" then
      "include /etc/nginx/mime.types;"
    else "types { text/plain txt; text/html html; text/css css; }"
  in
  let rlimit, events, keep_alive =
    match connections with
    | None -> ("", "worker_connections 4096;", "keepalive_requests 1000000;")
    | Some n ->
        (* A connection takes a descriptor, a request for a file one more
           while it is served; past the hard limit, only a worker started
           as root could raise its own. *)
        ( Printf.sprintf "worker_rlimit_nofile %d;\n"
            (min ((2 * n) + 256) (snd (Procs.descriptor_limits ()))),
          (* multi_accept: every waiting connection at each wake-up, as
             Braid's acceptor takes them (until none waits). With one at a
             time, while 10,000 connections arrive and the first are
             served, some waited longer than wrk's 2 s timeout to be
             accepted (907 timeouts in one run). *)
          Printf.sprintf "worker_connections %d; multi_accept on;" (n + 256),
          "keepalive_requests 1000000000;\n  keepalive_timeout 3600s;" )
  in
  Printf.sprintf
    {|worker_processes 1;
%sdaemon off;
pid %s/nginx.pid;
error_log %s/error.log;
events { %s }
http {
  %s
  %s
  %s
  %s
  client_body_temp_path %s/body;
  proxy_temp_path %s/proxy;
  fastcgi_temp_path %s/fastcgi;
  uwsgi_temp_path %s/uwsgi;
  scgi_temp_path %s/scgi;
  server {
    listen 127.0.0.1:%d%s%s%s;%s
    root %s;
  }
}
|}
    rlimit dir dir events types
    (match log with
    | Some (format, path) ->
        Printf.sprintf "log_format check '%s';\n  access_log %s check;" format
          path
    | None -> "access_log off;")
    keep_alive
    (* As Debian's nginx.conf has it: the file by sendfile(2), its first
       bytes in the header's packet (TCP_CORK). nginx's own default is off. *)
    (if sendfile then "sendfile on;\n  tcp_nopush on;" else "")
    dir dir dir dir dir port
    (if tls = None then "" else " ssl")
    (* nginx 1.22's way (1.25 has [http2 on]): h2 by ALPN with [ssl], else
       h2c by prior knowledge only, in place of HTTP/1.1. An idle HTTP/2
       connection is kept for an hour, as keep-alive ones are. *)
    (if http2 then " http2" else "")
    (match backlog with Some b -> " backlog=" ^ string_of_int b | None -> "")
    ((match tls with
     | Some (cert, key) ->
         (* As Braid: TLS 1.2 and 1.3 (Debian's nginx 1.22 leaves 1.3 out by
           default); nginx's and OpenSSL's defaults otherwise. *)
         Printf.sprintf
           "\n\
           \    ssl_certificate %s;\n\
           \    ssl_certificate_key %s;\n\
           \    ssl_protocols TLSv1.2 TLSv1.3;"
           cert key
     | None -> "")
    ^ if http2 then "\n    http2_idle_timeout 3600s;" else "")
    root

(* A peer from the first of [paths] that exists, in a fresh directory that
   holds its configuration ([config dir]) and goes when it stops. [argv dir
   binary conf] is its command line. *)
let start_in_temp_dir ~name ~paths ~cpu ~port ~config ~argv =
  match binary paths with
  | None -> None
  | Some binary ->
      let dir = temp_dir ("braid-bench-" ^ name) in
      let conf = Filename.concat dir (name ^ ".conf") in
      Out_channel.with_open_text conf (fun oc -> output_string oc (config dir));
      let p =
        try Procs.spawn ~cpu ~name (argv dir binary conf) ~port
        with e ->
          remove_tree dir;
          raise e
      in
      Some
        ( p,
          fun () ->
            Procs.stop p;
            remove_tree dir )

let start_nginx ?backlog ?connections ?(sendfile = false) ?tls ?log
    ?(http2 = false) ~cpu ~port ~root () =
  start_in_temp_dir ~name:"nginx"
    ~paths:[ "/usr/sbin/nginx"; "/usr/bin/nginx" ]
    ~cpu ~port
    ~config:(fun dir ->
      nginx_config ~dir ~port ~root ~backlog ~connections ~sendfile ~tls ~log
        ~http2)
    ~argv:(fun dir nginx conf ->
      [ nginx; "-e"; dir ^ "/error.log"; "-p"; dir; "-c"; conf ])

(* {1 h2o} *)

(* One thread, no access log (none is configured), files from [root];
   http1-request-timeout is how long h2o keeps an idle keep-alive
   connection. *)
let h2o_config ~port ~root ~connections ~tls =
  Printf.sprintf
    {|num-threads: 1
max-connections: %d
http1-request-timeout: 3600
http2-idle-timeout: 3600
listen:
  host: 127.0.0.1
  port: %d%s
hosts:
  default:
    paths:
      /:
        file.dir: %s
|}
    connections port
    (match tls with
    | Some (cert, key) ->
        Printf.sprintf "\n  ssl:\n    certificate-file: %s\n    key-file: %s"
          cert key
    | None -> "")
    root

let start_h2o ?tls ~connections ~cpu ~port ~root () =
  start_in_temp_dir ~name:"h2o"
    ~paths:[ "/usr/bin/h2o"; "/usr/sbin/h2o" ]
    ~cpu ~port
    ~config:(fun _ -> h2o_config ~port ~root ~connections ~tls)
    ~argv:(fun _ h2o conf -> [ h2o; "-c"; conf ])

type server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

let stop_all servers = List.iter (fun s -> s.stop ()) servers

let start_all ~experiment starts =
  let started = ref [] in
  match
    List.iter
      (fun (label, start) ->
        let port = Procs.free_port () in
        match start ~port with
        | Some (proc, stop) ->
            started := { label; port; proc; stop } :: !started
        | None ->
            Bench_harness.progress "%s: %s not found, skipped" experiment label)
      starts
  with
  | () -> List.rev !started
  | exception e ->
      stop_all !started;
      raise e

(* bench/dune links the benchmark after bin/main.exe, so the braid command
   of the same build (and profile) is next to it. *)
let braid_binary ~experiment =
  let build = Filename.dirname (Filename.dirname Sys.executable_name) in
  let braid = Filename.concat build "bin/main.exe" in
  if Sys.file_exists braid then braid
  else
    failwith (experiment ^ ": " ^ braid ^ " is missing: dune build bin/main.exe")
