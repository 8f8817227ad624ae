(* The [braid] command. Subcommands are terms of their own, so more can be
   added without touching the others. The options of [serve] and the
   configuration they make are in [Cli]. *)

open Cmdliner
open Braid_server
open Braid_web
open Braid_cli

(* {1 What the command adds to the server's signals} *)

(* systemd's state notifications are advisory: one that cannot be sent is
   reported on stderr and the server goes on. *)
let notify state =
  match Systemd.notify state with
  | Ok () -> ()
  | Error msg -> prerr_endline ("braid: warning: " ^ msg)

(* The listening socket [braid serve] holds besides the loops' copies: closed
   when listening stops, so that the socket closes with the loops' copies
   (new connections are then refused) unless a successor holds one. *)
type listening = {
  plain : Unix.file_descr;
  tls : Unix.file_descr option;  (** With HTTPS. *)
  closed : bool Atomic.t;
}

let stop_listening l =
  (* Once: a hand-over and a SIGTERM during its drain both stop listening,
     and a second close could hit a descriptor that reused the number. *)
  if not (Atomic.exchange l.closed true) then (
    Unix.close l.plain;
    Option.iter Unix.close l.tls)

(* SIGTERM or SIGINT, before the server drains. *)
let on_terminate ~listening () =
  notify "STOPPING=1";
  stop_listening listening

(* "HOST:PORT", an IPv6 address in brackets. *)
let address_to_string = function
  | Unix.ADDR_INET (ip, port) ->
      Printf.sprintf "%s:%d"
        (match Unix.string_of_inet_addr ip with
        | s when String.contains s ':' -> "[" ^ s ^ "]"
        | s -> s)
        port
  | Unix.ADDR_UNIX path -> path

(* {1 ProxyPass}

   The file's [ProxyPass] routes, checked without touching the table in
   force, and a function that installs them: a reload checks everything
   first and installs only once the whole file is accepted. A prefix kept
   keeps its proxy (its upstreams' health and connections); in-flight
   requests finish with the upstreams they started with. *)
let proxy_routes ~client ~table (file : Config_file.t option) =
  let proxies = match file with Some f -> f.proxies | None -> [] in
  let current = Braid_proxy.Table.get table in
  let rec check acc = function
    | [] -> Ok (List.rev acc)
    | (p : Config_file.proxy) :: rest -> (
        match Braid_proxy.create ~client p.proxy with
        | Error msg ->
            Error
              (Printf.sprintf "%s:%d: ProxyPass %s: %s" (Option.get file).file
                 p.proxy_line p.prefix msg)
        | Ok fresh -> check ((p, fresh) :: acc) rest)
  in
  Result.map
    (fun checked () ->
      Braid_proxy.Table.set table
        (List.map
           (fun ((p : Config_file.proxy), fresh) ->
             match List.assoc_opt p.prefix current with
             | Some kept -> (
                 match Braid_proxy.update kept p.proxy with
                 | Ok () -> (p.prefix, kept)
                 | Error _ -> (p.prefix, fresh))
             | None -> (p.prefix, fresh))
           checked))
    (check [] proxies)

(* SIGHUP re-reads the file: new connections get the new configuration,
   connections in progress keep theirs, and a file that does not load or
   check leaves the current one in force. What cannot change live (the
   address, the number of loops) is reported. Outcomes are always logged. *)
let on_reload server writer ~defaults ~file ~flags ~activated ~client ~table ()
    =
  let log text = Log_writer.error writer ~time:(Services.now ()) text in
  let reload path =
    let ( let* ) = Result.bind in
    let* f =
      match path with
      | Some path -> Result.map Option.some (Config_file.load path)
      | None -> Ok None
    in
    let* config = Cli.config ~defaults ~file:f flags in
    let* install_proxies = proxy_routes ~client ~table f in
    (* Before [set_config]: the address and loops the server runs with. *)
    let running = Server.config server in
    let* () = Server.set_config server config in
    install_proxies ();
    Ok (config, running)
  in
  match (file, (Server.config server).tls) with
  | None, None ->
      log "warning: SIGHUP: no configuration file to re-read (--config)"
  | path, _ -> (
      (* Without a file, the certificates are what SIGHUP re-reads. *)
      let source = Option.value path ~default:"the command line" in
      notify "RELOADING=1";
      Fun.protect ~finally:(fun () -> notify "READY=1") @@ fun () ->
      let outcome = reload path in
      Option.iter
        (fun m -> Metrics.reloaded m ~ok:(Result.is_ok outcome))
        (Server.metrics server);
      match outcome with
      | Error msg ->
          log
            ("error: reload rejected, the configuration in force stays: " ^ msg)
      | Ok ((config : Config.t), running) ->
          Log_writer.set_paths writer ~access:config.access_log
            ~error:config.error_log;
          if config.listen <> running.listen && not activated then
            log
              (Printf.sprintf
                 ("warning: %s: Listen %s needs a restart; "
                ^^ "still listening on the old address")
                 source
                 (address_to_string config.listen));
          (match (config.tls, running.tls) with
          | Some tls, Some was when tls.address <> was.address ->
              log
                (Printf.sprintf
                   ("warning: %s: TlsListen %s needs a restart; "
                  ^^ "still serving HTTPS on the old address")
                   source
                   (address_to_string tls.address))
          | Some _, None ->
              log
                (Printf.sprintf
                   "warning: %s: HTTPS needs a restart to be turned on" source)
          | None, Some _ ->
              log
                (Printf.sprintf
                   "warning: %s: HTTPS needs a restart to be turned off; still \
                    serving it with the certificates in force"
                   source)
          | _ -> ());
          if config.domains <> running.domains then
            log
              (Printf.sprintf "warning: %s: Domains %d needs a restart" source
                 config.domains);
          if config.io_backend <> running.io_backend then
            log
              (Printf.sprintf "warning: %s: IoBackend %s needs a restart" source
                 (match config.io_backend with
                 | Some b -> Braid_io.string_of_backend b
                 | None -> "(the default)"));
          log ("info: configuration reloaded from " ^ source))

(* SIGUSR2: the hand-over to a new binary (what the log lines and the
   manual call a binary upgrade). A new copy of the executable (the file on
   disk now: the new version) gets the listening sockets; once it serves,
   this process stops listening, and the server drains as for SIGTERM
   ([true]). If it fails to start, this one goes on serving and says why
   ([false]). *)
let hand_over writer ~listening () =
  let log text = Log_writer.error writer ~time:(Services.now ()) text in
  log ("info: upgrade: starting " ^ Sys.executable_name);
  match
    Handover.start_successor ~listening:listening.plain
      ?tls_listening:listening.tls Sys.executable_name Sys.argv
  with
  | Ok pid ->
      Printf.printf "braid: upgraded: process %d serves; draining\n%!" pid;
      log (Printf.sprintf "info: upgrade: process %d serves; draining" pid);
      notify (Printf.sprintf "MAINPID=%d" pid);
      stop_listening listening;
      true
  | Error why ->
      log ("error: upgrade failed, still serving: " ^ why);
      false

(* {1 braid serve} *)

let serve flags config_file demo dev log_level shutdown_timeout io_backend =
  let ( let* ) = Result.bind in
  (* --io-backend is a flag like the others (it beats the file's IoBackend,
     at start and at each reload), and also goes to BRAID_IO_BACKEND: what
     else of this process runs loops, and a binary upgrade's new process
     (which inherits the environment), take the same backend. *)
  let flags =
    match io_backend with
    | None -> flags
    | Some backend ->
        Unix.putenv "BRAID_IO_BACKEND" (Braid_io.string_of_backend backend);
        flags
        @ [
            {
              Layer.origin = "option '--io-backend'";
              change = Layer.io_backend backend;
            };
          ]
  in
  (* As many descriptors as the hard limit allows, and a connection limit
     that fits in them, unless the file or the command line sets one. *)
  let defaults =
    match Server.raise_descriptor_limit () with
    | descriptors ->
        {
          Config.default with
          max_connections = Server.connections_for_descriptors descriptors;
        }
    | exception Unix.Unix_error _ -> Config.default
  in
  let configured =
    let* file =
      match config_file with
      | None -> Ok None
      | Some path -> Result.map Option.some (Config_file.load path)
    in
    let* flags =
      if dev then (
        let* cert, layer = Cli.dev_layer () in
        Printf.printf
          "braid: development certificate %s (key %s), valid until %s; trust \
           it: curl --cacert %s\n\
           %!"
          cert.certificate cert.key
          (Braid_http.Http_date.format cert.not_after)
          cert.certificate;
        Ok (layer @ flags))
      else Ok flags
    in
    let* config = Cli.config ~defaults ~file flags in
    (* Sockets passed by systemd (socket activation): the server listens on
       them, never binds, and a restart refuses no connection. *)
    let* passed = Systemd.listeners () in
    let* listening =
      match passed with
      | [] -> (
          (* Handed over by a predecessor ({!Handover}), else bound here:
             one socket, which every loop accepts on and SIGUSR2 can hand
             over in turn. *)
          let* inherited = Handover.inherited () in
          match inherited with
          | Some fd -> Ok (fd, true)
          | None -> (
              match Handover.listen config.listen with
              | fd -> Ok (fd, false)
              | exception Unix.Unix_error (e, _, _) ->
                  Error
                    (Printf.sprintf "listen %s: %s"
                       (address_to_string config.listen)
                       (Unix.error_message e))))
      | [ one ] -> Ok (one.fd, true)
      | several -> (
          match
            List.find_opt
              (fun (l : Systemd.listener) -> l.name = "http")
              several
          with
          | Some l -> Ok (l.fd, true)
          | None ->
              Error
                "socket activation: several sockets passed and none named \
                 \"http\" (FileDescriptorName=http)")
    in
    (* HTTPS: the socket named "https" by systemd, else one handed over,
       else bound here, so that SIGUSR2 can hand it over too. *)
    let* tls_listening =
      match config.tls with
      | None -> Ok None
      | Some tls -> (
          match
            List.find_opt
              (fun (l : Systemd.listener) -> l.name = "https")
              passed
          with
          | Some l -> Ok (Some l.fd)
          | None -> (
              let* inherited = Handover.inherited_tls () in
              match inherited with
              | Some fd -> Ok (Some fd)
              | None -> (
                  match Handover.listen tls.address with
                  | fd -> Ok (Some fd)
                  | exception Unix.Unix_error (e, _, _) ->
                      Error
                        (Printf.sprintf "listen %s: %s"
                           (address_to_string tls.address)
                           (Unix.error_message e)))))
    in
    (* With --dev, the certificate's settings: kept for the reloads. *)
    Ok (config, listening, tls_listening, flags, file)
  in
  match configured with
  | Error msg -> `Error (false, msg)
  | Ok (config, (plain, passed), tls, flags, file) -> (
      (* The upstream connections of every loop belong to this switch, which
         outlives the loops. *)
      Braid.Switch.run
      @@ fun sw ->
      let client =
        Braid_client.create ~sw ~config:Braid_proxy.client_config ()
      in
      let table = Braid_proxy.Table.create () in
      match proxy_routes ~client ~table file with
      | Error msg -> `Error (false, msg)
      | Ok install_proxies ->
          install_proxies ();
          let listening = { plain; tls; closed = Atomic.make false } in
          (* The pool's domains and the event loops share the cores. *)
          let pool =
            if demo then
              Some
                (Braid_pool.create
                   ~domains:
                     (max 1
                        (Domain.recommended_domain_count () - config.domains))
                   ())
            else None
          in
          let router =
            match pool with
            | Some pool -> Demo.routes pool Router.empty
            | None -> Router.empty
          in
          let router = Router.use (Braid_proxy.Table.middleware table) router in
          let writer =
            (* Its own notes are stamped by the services' clock, as every event is. *)
            Log_writer.create ~now:Services.now ?access:config.access_log
              ?error:config.error_log ()
          in
          let settings =
            Real_services.settings ~log_level ~logger:writer router
          in
          let result =
            match Server.create ~settings config with
            | Error msg -> `Error (false, msg)
            | Ok server -> (
                let on_listen address =
                  Printf.printf
                    "braid: serving http://%s/%s%s with %d loop%s, up to %d \
                     connections\n\
                     %!"
                    (address_to_string address)
                    (match (Server.config server).root with
                    | Some r -> " from " ^ r
                    | None -> "")
                    (if demo then " (demo routes)" else "")
                    config.domains
                    (if config.domains = 1 then "" else "s")
                    config.max_connections;
                  Option.iter
                    (fun a ->
                      Printf.printf "braid: serving https://%s/ too\n%!"
                        (address_to_string a))
                    (Server.https_address server);
                  notify "READY=1";
                  Handover.ready ()
                in
                match
                  (* The signals and the logger as [Server.serve] has them; what
                 is the command's own: systemd's notifications, the
                 configuration file, the hand-over to a new binary. *)
                  (* Active health checks ({!Braid_proxy.Table.check_health})
                     run in a fiber of the first loop, beside the server:
                     timers of that loop, no domain of their own (an idle
                     domain is not free: every minor collection stops all
                     domains). They follow the table, so a reload may add
                     or remove them; a table without checks costs a timer
                     a second. *)
                  Server.run_with_signals ~shutdown_timeout
                    ~background:(fun () -> Braid_proxy.Table.check_health table)
                    ~on_terminate:(on_terminate ~listening)
                    ~on_reload:
                      (on_reload server writer ~defaults ~file:config_file
                         ~flags ~activated:passed ~client ~table)
                    ~hand_over:(hand_over writer ~listening)
                    ~logger:writer ~on_listen ~listening:listening.plain
                    ?tls_listening:listening.tls server
                with
                | () -> `Ok ()
                | exception (Braid_io.Io_error _ as e) ->
                    `Error (false, Option.get (Braid_io.error_message e)))
          in
          Option.iter Braid_pool.shutdown pool;
          result)

let serve_cmd =
  let doc = "serve HTTP/1.1: static files and routes" in
  let man =
    [
      `S Manpage.s_description;
      `P
        "$(tname) answers HTTP/1.1 (and 1.0) requests with keep-alive, \
         pipelining, $(b,Expect: 100-continue), chunked uploads and responses, \
         and static files with $(b,Last-Modified)/$(b,If-Modified-Since) and \
         single byte ranges. Malformed requests get the status RFC 9110 asks \
         for and the connection goes on when it can.";
      `P
        "Logs are written by a dedicated fiber: requests never wait for the \
         disk (when it falls behind, entries are dropped and the count is \
         logged), and a log file deleted or renamed away (rotation) is \
         reopened at its path within a second.";
      `P
        "SIGHUP re-reads the $(b,--config) file: connections accepted from \
         then on get the new configuration, those in progress keep theirs, and \
         log files switch. A file with an error is rejected (logged with its \
         file:line) and the configuration in force stays. $(b,Listen) and \
         $(b,Domains) need a restart. Command-line options keep overriding the \
         file.";
      `P
        "SIGTERM or SIGINT shuts it down gracefully: listening stops, a \
         connection waiting for a request may still send one for a second, \
         requests in progress finish (with $(b,Connection: close)) for up to \
         $(b,--shutdown-timeout) seconds, then the rest are closed and \
         $(tname) exits 0. SIGUSR2 upgrades the binary: the executable is \
         started again with the listening socket, and once it serves, this \
         process drains as for SIGTERM (if it fails, this one goes on).";
      `P
        "Under systemd: with socket activation ($(b,LISTEN_FDS), a socket \
         unit), $(tname) accepts on the socket it is given (the one named \
         $(b,http) if several) and ignores $(b,--host), $(b,--port) and \
         $(b,Listen); with $(b,NOTIFY_SOCKET) set ($(b,Type=notify)) it \
         reports READY=1 once serving, RELOADING=1 and READY=1 around a \
         reload, and STOPPING=1 at shutdown. Units: examples/systemd/.";
      `S Manpage.s_examples;
      `Pre "  braid serve --demo --root examples/public --port 8080";
      `Pre "  curl -d hello http://127.0.0.1:8080/reverse";
      `Pre "  curl http://127.0.0.1:8080/fib/30";
      `Pre "  braid serve --dev --port 8080 --tls-port 8443";
      `Pre
        "  curl --cacert ~/.local/state/braid/dev-certificate/cert.pem \
         https://localhost:8443/";
    ]
  in
  Cmd.v
    (Cmd.info "serve" ~doc ~man)
    Term.(
      ret
        (const serve $ Cli.flags $ Cli.config_file $ Cli.demo $ Cli.dev
       $ Cli.log_level $ Cli.shutdown_timeout $ Cli.io_backend))

let () =
  let doc = "Braid: OCaml 5 concurrency and an HTTP/1.1 server" in
  let info = Cmd.info "braid" ~doc in
  let default = Term.(ret (const (`Help (`Auto, None)))) in
  exit (Cmd.eval (Cmd.group ~default info [ serve_cmd; Trace_command.cmd ]))
