open Braid_server

let temp_dir prefix = Filename.temp_dir prefix ""

let write_file path text =
  Out_channel.with_open_bin path (fun oc -> output_string oc text)

let port_of = function
  | Unix.ADDR_INET (_, p) -> p
  | Unix.ADDR_UNIX _ -> invalid_arg "not a TCP address"

let braid ?tls ?(domains = 1) router f =
  let settings = Real_services.settings ~log_level:Error router in
  let config =
    {
      Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" 0;
      domains;
      tls =
        Option.map
          (fun (chain, key) ->
            {
              Config.address = Braid_io.Net.tcp "127.0.0.1" 0;
              certificates = [ { Braid_tls.Server_context.chain; key } ];
              redirect = false;
            })
          tls;
    }
  in
  let server =
    match Server.create ~settings config with
    | Ok s -> s
    | Error m -> failwith m
  in
  let listening = Braid_sync.Promise.create () in
  let domain =
    Domain.spawn (fun () ->
        match
          Server.run
            ~on_listen:(fun a ->
              ignore (Braid_sync.Promise.try_fill listening (Ok a)))
            server
        with
        | () -> ()
        | exception e ->
            ignore (Braid_sync.Promise.try_fill listening (Error e)))
  in
  match Braid_sync.Promise.await listening with
  | exception e ->
      Domain.join domain;
      raise e
  | address ->
      Fun.protect
        ~finally:(fun () ->
          Server.stop server;
          Domain.join domain)
        (fun () ->
          f ~port:(port_of address)
            ~tls_port:(Option.map port_of (Server.https_address server)))

let free_port () =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.bind s (ADDR_INET (Unix.inet_addr_loopback, 0));
  let p = port_of (Unix.getsockname s) in
  Unix.close s;
  p

let run_quiet args =
  let null = Unix.openfile "/dev/null" [ O_RDWR ] 0 in
  let pid =
    Unix.create_process (List.hd args) (Array.of_list args) null null null
  in
  Unix.close null;
  match Unix.waitpid [] pid with
  | _, WEXITED 0 -> ()
  | _ -> failwith ("failed: " ^ String.concat " " args)

type certs = { ca : string; chain : string; key : string }

let certs =
  let made =
    lazy
      (let dir = temp_dir "braid-client-ca" in
       let p name = Filename.concat dir name in
       run_quiet
         [
           "openssl";
           "req";
           "-x509";
           "-newkey";
           "ec";
           "-pkeyopt";
           "ec_paramgen_curve:P-256";
           "-nodes";
           "-keyout";
           p "ca.key";
           "-out";
           p "ca.pem";
           "-days";
           "2";
           "-subj";
           "/CN=Braid test CA";
         ];
       write_file (p "ext")
         "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n";
       run_quiet
         [
           "openssl";
           "req";
           "-new";
           "-newkey";
           "ec";
           "-pkeyopt";
           "ec_paramgen_curve:P-256";
           "-nodes";
           "-keyout";
           p "leaf.key";
           "-out";
           p "leaf.csr";
           "-subj";
           "/CN=localhost";
         ];
       run_quiet
         [
           "openssl";
           "x509";
           "-req";
           "-in";
           p "leaf.csr";
           "-CA";
           p "ca.pem";
           "-CAkey";
           p "ca.key";
           "-set_serial";
           "35";
           "-days";
           "2";
           "-extfile";
           p "ext";
           "-out";
           p "leaf.pem";
         ];
       { ca = p "ca.pem"; chain = p "leaf.pem"; key = p "leaf.key" })
  in
  fun () -> Lazy.force made

(* Waits until something accepts on [port], or fails after 10 s. *)
let wait_listening port =
  let deadline = Unix.gettimeofday () +. 10. in
  let rec go () =
    let s = Unix.socket PF_INET SOCK_STREAM 0 in
    match Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port)) with
    | () -> Unix.close s
    | exception Unix.Unix_error _ ->
        Unix.close s;
        if Unix.gettimeofday () > deadline then
          failwith (Printf.sprintf "nothing listens on %d" port);
        Unix.sleepf 0.02;
        go ()
  in
  go ()

let with_process args ~port f =
  let null = Unix.openfile "/dev/null" [ O_RDWR ] 0 in
  let pid =
    Unix.create_process (List.hd args) (Array.of_list args) null null null
  in
  Unix.close null;
  Fun.protect
    ~finally:(fun () ->
      (try Unix.kill pid Sys.sigterm with Unix.Unix_error _ -> ());
      ignore (Unix.waitpid [] pid))
    (fun () ->
      wait_listening port;
      f ~port)

let python_http ?tls ~dir f =
  let port = free_port () in
  let script =
    Printf.sprintf
      "import http.server, ssl, functools, sys\n\
       h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=%S)\n\
       s = http.server.ThreadingHTTPServer(('127.0.0.1', %d), h)\n\
       %ss.serve_forever()\n"
      dir port
      (match tls with
      | None -> ""
      | Some c ->
          Printf.sprintf
            "c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
             c.load_cert_chain(%S, %S)\n\
             s.socket = c.wrap_socket(s.socket, server_side=True)\n"
            c.chain c.key)
  in
  with_process [ "python3"; "-c"; script ] ~port f

let nginx ~dir f =
  let port = free_port () in
  let prefix = temp_dir "braid-nginx" in
  let conf = Filename.concat prefix "nginx.conf" in
  write_file conf
    (Printf.sprintf
       "daemon off;\n\
        master_process off;\n\
        worker_processes 1;\n\
        error_log %s/error.log;\n\
        pid %s/nginx.pid;\n\
        events { worker_connections 256; }\n\
        http {\n\
       \  access_log off;\n\
       \  client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;\n\
       \  uwsgi_temp_path %s; scgi_temp_path %s;\n\
       \  keepalive_timeout 30;\n\
       \  server {\n\
       \    listen 127.0.0.1:%d;\n\
       \    root %s;\n\
       \    add_header X-Connection $connection always;\n\
       \  }\n\
        }\n"
       prefix prefix prefix prefix prefix prefix prefix port dir);
  with_process [ "nginx"; "-p"; prefix; "-c"; conf ] ~port f
