(* The [braid] command. Subcommands are terms of their own, so more can be
   added (and [serve] can grow options such as --config) without touching
   the others. *)

open Cmdliner
open Braid_server
open Braid_cli

(* {1 Timeouts, connection limit, shutdown} *)

(* The flags that override a configuration; [None]: keep the base value. *)
type flags = {
  header_timeout : float option;
  keep_alive_timeout : float option;
  body_timeout : float option;
  send_timeout : float option;
  handler_timeout : float option;
  max_connections : int option;
}

(* The flags over a base configuration (the defaults, or a file's). *)
let apply_flags f (c : Config.t) =
  let pick flag base = Option.value flag ~default:base in
  {
    c with
    timeouts =
      {
        request_header = pick f.header_timeout c.timeouts.request_header;
        keep_alive = pick f.keep_alive_timeout c.timeouts.keep_alive;
        body = pick f.body_timeout c.timeouts.body;
        send = pick f.send_timeout c.timeouts.send;
        handler =
          (match f.handler_timeout with
          | Some _ as h -> h
          | None -> c.timeouts.handler);
      };
    max_connections = pick f.max_connections c.max_connections;
  }

(* SIGTERM or SIGINT: a graceful shutdown; a second one: stop at once.
   [ready] is filled once subscribed, so no signal goes unseen after the
   "serving" line. *)
let on_termination server ~deadline ~ready () =
  Braid_io.Switch.run @@ fun sw ->
  let signals = Braid_io.Signal.subscribe ~sw [ Sys.sigterm; Sys.sigint ] in
  Braid_sync.Promise.fill ready ();
  ignore (Braid_io.Signal.wait signals);
  Server.shutdown server ~deadline;
  ignore (Braid_io.Signal.wait signals);
  Server.stop server

(* The fibers that run beside the server, in its first loop, under one
   switch. Order at shutdown: the signal fiber starts the drain; the server
   closes its listeners and waits for the connections of every loop (up to
   the deadline); only then are these fibers cancelled, so one that writes
   logs still sees the last requests and may flush when cancelled. *)
let background fibers () =
  Braid_io.Switch.run @@ fun sw ->
  List.iter (fun f -> ignore (Braid_io.Fiber.fork ~sw f)) fibers

(* {1 Configuration file, logs, SIGHUP} *)

(* What the command line sets over the file: the file's value is used only
   where the flag is absent. *)
type cli = {
  host : string option;
  port : int option;
  root : string option;
  domains : int option;
  max_body : int option;
  access_log : string option;
  error_log : string option;
}

(* "-" is standard output (the log writer reopens it like any path). *)
let log_path = function "-" -> "/dev/stdout" | p -> p

let override cli flags (c : Config.t) =
  let c =
    {
      c with
      root = (match cli.root with Some _ as r -> r | None -> c.root);
      limits =
        {
          c.limits with
          max_body = Option.value cli.max_body ~default:c.limits.max_body;
        };
    }
  in
  apply_flags flags c

let first a b default =
  match (a, b) with Some v, _ | None, Some v -> v | None, None -> default

let listen_of cli (file : Config_file.t option) =
  let l = Option.bind file (fun (f : Config_file.t) -> f.listen) in
  ( first cli.host
      (Option.bind l (fun (l : Config_file.listen) -> l.host))
      "127.0.0.1",
    first cli.port (Option.map (fun (l : Config_file.listen) -> l.port) l) 8080
  )

let domains_of cli file =
  first cli.domains (Option.bind file (fun (f : Config_file.t) -> f.domains)) 1

(* The access and error log paths: a flag, else the file, else none (the
   error log then is standard error). *)
let log_paths cli (file : Config_file.t option) =
  let from_file get = Option.join (Option.bind file get) in
  let pick flag get =
    match flag with Some p -> Some (log_path p) | None -> from_file get
  in
  ( pick cli.access_log (fun (f : Config_file.t) -> f.access_log),
    pick cli.error_log (fun (f : Config_file.t) -> f.error_log) )

(* The whole configuration: the file's and the flags' settings over the
   defaults. *)
let configure cli flags file =
  let ( let* ) = Result.bind in
  let* config =
    match file with
    | None -> Ok (override cli flags Config.default)
    | Some f ->
        Config_file.to_config ~override:(override cli flags) f Config.default
  in
  let host, port = listen_of cli file in
  let* listen =
    match Braid_io.Net.tcp host port with
    | a -> Ok a
    | exception Invalid_argument msg -> Error msg
  in
  let access_log, error_log = log_paths cli file in
  Ok
    { config with listen; domains = domains_of cli file; access_log; error_log }

(* "HOST:PORT", an IPv6 address in brackets. *)
let address_to_string = function
  | Unix.ADDR_INET (ip, port) ->
      Printf.sprintf "%s:%d"
        (match Unix.string_of_inet_addr ip with
        | s when String.contains s ':' -> "[" ^ s ^ "]"
        | s -> s)
        port
  | Unix.ADDR_UNIX path -> path

(* SIGHUP re-reads the file: new connections get the new configuration,
   connections in progress keep theirs, and a file that does not load or
   check leaves the current one in force. What cannot change live (the
   address, the number of loops) is reported. Outcomes are always logged. *)
let on_reload server writer ~file ~cli ~flags ~ready () =
  Braid_io.Switch.run @@ fun sw ->
  let signals = Braid_io.Signal.subscribe ~sw [ Sys.sighup ] in
  Braid_sync.Promise.fill ready ();
  let log text = Log_writer.error writer text in
  let reload path =
    let ( let* ) = Result.bind in
    let* f = Config_file.load path in
    let* config = configure cli flags (Some f) in
    let running = Server.config server in
    let* () = Server.set_config server config in
    Ok (config, running)
  in
  while true do
    ignore (Braid_io.Signal.wait signals);
    match file with
    | None -> log "warning: SIGHUP: no configuration file to re-read (--config)"
    | Some path -> (
        match reload path with
        | Error msg ->
            log
              ("error: reload rejected, the configuration in force stays: "
             ^ msg)
        | Ok (config, running) ->
            Log_writer.set_paths writer ~access:config.access_log
              ~error:config.error_log;
            if config.listen <> running.listen then
              log
                (Printf.sprintf
                   ("warning: %s: Listen %s needs a restart; "
                  ^^ "still listening on the old address")
                   path
                   (address_to_string config.listen));
            if config.domains <> running.domains then
              log
                (Printf.sprintf "warning: %s: Domains %d needs a restart" path
                   config.domains);
            log ("info: configuration reloaded from " ^ path))
  done

let serve cli config_file demo log_level flags shutdown_timeout =
  let ( let* ) = Result.bind in
  let configured =
    let* file =
      match config_file with
      | None -> Ok None
      | Some path -> Result.map Option.some (Config_file.load path)
    in
    configure cli flags file
  in
  match configured with
  | Error msg -> `Error (false, msg)
  | Ok config -> (
      let domains = config.domains in
      let pool =
        if demo then
          Some
            (Braid_pool.create
               ~domains:(max 1 (Domain.recommended_domain_count () - domains))
               ())
        else None
      in
      let router =
        match pool with
        | Some pool -> Demo.routes pool Router.empty
        | None -> Router.empty
      in
      let writer =
        Log_writer.create ?access:config.access_log ?error:config.error_log ()
      in
      let settings = Production.settings ~log_level ~logger:writer router in
      match Server.create ~settings config with
      | Error msg -> `Error (false, msg)
      | Ok server ->
          let ready = Braid_sync.Promise.create () in
          let reload_ready = Braid_sync.Promise.create () in
          let fibers =
            [
              on_termination server ~deadline:shutdown_timeout ~ready;
              (fun () -> Log_writer.run writer);
              on_reload server writer ~file:config_file ~cli ~flags
                ~ready:reload_ready;
            ]
          in
          let on_listen address =
            Braid_sync.Promise.await ready;
            Braid_sync.Promise.await reload_ready;
            match address with
            | Unix.ADDR_INET _ ->
                Printf.printf "braid: serving http://%s/%s%s with %d loop%s\n%!"
                  (address_to_string address)
                  (match (Server.config server).root with
                  | Some r -> " from " ^ r
                  | None -> "")
                  (if demo then " (demo routes)" else "")
                  domains
                  (if domains = 1 then "" else "s")
            | Unix.ADDR_UNIX _ -> ()
          in
          let result =
            match
              Server.run ~on_listen ~background:(background fibers) server
            with
            | () -> `Ok ()
            | exception Braid_io.Net.Error { op; error } ->
                `Error
                  (false, Printf.sprintf "%s: %s" op (Unix.error_message error))
          in
          Option.iter Braid_pool.shutdown pool;
          result)

let serve_cmd =
  let host =
    Arg.(
      value
      & opt (some string) None
      & info [ "host" ] ~docv:"ADDR"
          ~doc:
            "Listen on $(docv), an IPv4 or IPv6 literal ($(b,0.0.0.0) for all \
             interfaces). Default: the configuration file's $(b,Listen), else \
             127.0.0.1.")
  in
  let port =
    Arg.(
      value
      & opt (some int) None
      & info [ "p"; "port" ] ~docv:"PORT"
          ~doc:
            "Listen on TCP port $(docv); 0 lets the system choose (printed at \
             start). Default: the configuration file's $(b,Listen), else 8080.")
  in
  let root =
    Arg.(
      value
      & opt (some dir) None
      & info [ "root" ] ~docv:"DIR"
          ~doc:
            "Serve the files under $(docv) for GET and HEAD requests that no \
             route matches. Paths that would leave $(docv) (dot-segments, \
             encoded slashes, symbolic links pointing outside) are refused. \
             Without it (and without $(b,DocumentRoot) in the configuration \
             file), such requests get 404.")
  in
  let domains =
    Arg.(
      value
      & opt (some int) None
      & info [ "domains" ] ~docv:"N"
          ~doc:
            "Run $(docv) event loops, one per domain, each accepting on its \
             own socket bound with SO_REUSEPORT: the kernel spreads \
             connections among them. Default: the configuration file's \
             $(b,Domains), else 1.")
  in
  let demo =
    Arg.(
      value & flag
      & info [ "demo" ]
          ~doc:
            "Add the demonstration routes: $(b,POST /reverse) answers the body \
             reversed byte-wise; $(b,GET /fib/)$(i,n) computes the $(i,n)th \
             Fibonacci number (0 to 35) on a work-stealing pool of domains \
             while the event loop keeps serving; $(b,GET /sleep/)$(i,ms) \
             answers after $(i,ms) milliseconds (a slow request).")
  in
  let max_body =
    Arg.(
      value
      & opt (some int) None
      & info [ "max-body" ] ~docv:"BYTES"
          ~doc:
            (Printf.sprintf
               "Refuse request bodies larger than $(docv) with 413 (default: \
                the configuration file's $(b,MaxBodySize), else %d)."
               Braid_http.Limits.default.max_body))
  in
  let log_level =
    Arg.(
      value
      & opt
          (enum
             [
               ("error", Log.Error);
               ("warning", Log.Warning);
               ("info", Log.Info);
               ("debug", Log.Debug);
             ])
          Log.Warning
      & info [ "log-level" ] ~docv:"LEVEL"
          ~doc:
            "Write messages up to $(docv) ($(b,error), $(b,warning), $(b,info) \
             or $(b,debug)) to the error log.")
  in
  let access_log =
    Arg.(
      value
      & opt (some string) None
      & info [ "access-log" ] ~docv:"FILE"
          ~doc:
            "Append an access log in Combined Log Format to $(docv) ($(b,-): \
             standard output). Overrides the configuration file's \
             $(b,AccessLog). Default: none.")
  in
  let error_log =
    Arg.(
      value
      & opt (some string) None
      & info [ "error-log" ] ~docv:"FILE"
          ~doc:
            "Append messages to $(docv) ($(b,-): standard output). Overrides \
             the configuration file's $(b,ErrorLog). Default: standard error.")
  in
  let config_file =
    Arg.(
      value
      & opt (some file) None
      & info [ "c"; "config" ] ~docv:"FILE"
          ~doc:
            "Read Apache-like directives from $(docv) ($(b,Listen), \
             $(b,DocumentRoot), $(b,Domains), $(b,MaxConnections), \
             $(b,MaxBodySize), $(b,Timeout), $(b,RequestHeaderTimeout), \
             $(b,KeepAliveTimeout), $(b,HandlerTimeout), $(b,AccessLog), \
             $(b,ErrorLog); see docs/server.md). Command-line options override \
             it. SIGHUP re-reads it.")
  in
  let cli =
    let make host port root domains max_body access_log error_log =
      { host; port; root; domains; max_body; access_log; error_log }
    in
    Term.(
      const make $ host $ port $ root $ domains $ max_body $ access_log
      $ error_log)
  in
  let seconds name ~doc =
    Arg.(value & opt (some float) None & info [ name ] ~docv:"SECONDS" ~doc)
  in
  let flags =
    let make header_timeout keep_alive_timeout body_timeout send_timeout
        handler_timeout max_connections =
      {
        header_timeout;
        keep_alive_timeout;
        body_timeout;
        send_timeout;
        handler_timeout;
        max_connections;
      }
    in
    Term.(
      const make
      $ seconds "header-timeout"
          ~doc:
            (Printf.sprintf
               "A client has $(docv) to send a whole request head (default \
                %g), counted from the connection's start for the first request \
                and from the first byte for later ones, however slowly it \
                trickles; then it gets 408 and is closed."
               Config.default.timeouts.request_header)
      $ seconds "keep-alive-timeout"
          ~doc:
            (Printf.sprintf
               "Close an idle keep-alive connection after $(docv) (default %g)."
               Config.default.timeouts.keep_alive)
      $ seconds "body-timeout"
          ~doc:
            (Printf.sprintf
               "Each read of a request body may wait $(docv) (default %g); a \
                stalled upload gets 408 and is closed."
               Config.default.timeouts.body)
      $ seconds "send-timeout"
          ~doc:
            (Printf.sprintf
               "Each write of a response may wait $(docv) for the client to \
                take data (default %g); a client that stops reading is closed."
               Config.default.timeouts.send)
      $ seconds "handler-timeout"
          ~doc:
            "Answer 503 to a request whose handler runs longer than $(docv), \
             and cancel the handler (default: no limit)."
      $ Arg.(
          value
          & opt (some int) None
          & info [ "max-connections" ] ~docv:"N"
              ~doc:
                (Printf.sprintf
                   "Serve at most $(docv) connections at once over all loops \
                    (default %d); further ones wait in the kernel's backlog."
                   Config.default.max_connections)))
  in
  let shutdown_timeout =
    Arg.(
      value & opt float 10.
      & info [ "shutdown-timeout" ] ~docv:"SECONDS"
          ~doc:
            "On SIGTERM or SIGINT, stop accepting, let requests in \
             progress              finish for up to $(docv), then close the \
             rest and exit 0. A              second signal ends it at once.")
  in
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
        "SIGTERM or SIGINT shuts it down gracefully: listening stops, idle \
         connections close, requests in progress finish (with $(b,Connection: \
         close)) for up to $(b,--shutdown-timeout) seconds, then the rest are \
         closed and $(tname) exits 0.";
      `S Manpage.s_examples;
      `Pre "  braid serve --demo --root examples/public --port 8080";
      `Pre "  curl -d hello http://127.0.0.1:8080/reverse";
      `Pre "  curl http://127.0.0.1:8080/fib/30";
    ]
  in
  Cmd.v
    (Cmd.info "serve" ~doc ~man)
    Term.(
      ret
        (const serve $ cli $ config_file $ demo $ log_level $ flags
       $ shutdown_timeout))

let () =
  let doc = "Braid: OCaml 5 concurrency and an HTTP/1.1 server" in
  let info = Cmd.info "braid" ~doc in
  let default = Term.(ret (const (`Help (`Auto, None)))) in
  exit (Cmd.eval (Cmd.group ~default info [ serve_cmd ]))
