(* The [braid] command. Subcommands are terms of their own, so more can be
   added (and [serve] can grow options such as --config) without touching
   the others. *)

open Cmdliner
open Braid_server

(* {1 Timeouts, connection limit, shutdown} *)

(* The flags that override a configuration; [None]: keep the base value. *)
type flags = {
  header_timeout : float option;
  keep_alive_timeout : float option;
  body_timeout : float option;
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

let serve host port root domains demo max_body log_level access_log flags
    shutdown_timeout =
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
  let access_log =
    if access_log then
      Some
        (fun line ->
          print_string (line ^ "\n");
          flush stdout)
    else None
  in
  let settings = Production.settings ~log_level ?access_log router in
  let config =
    apply_flags flags
      {
        Config.default with
        root;
        limits = { Config.default.limits with max_body };
      }
  in
  match Braid_io.Net.tcp host port with
  | exception Invalid_argument msg -> `Error (false, msg)
  | address -> (
      match Server.create ~domains ~settings ~config address with
      | Error msg -> `Error (false, msg)
      | Ok server ->
          let ready = Braid_sync.Promise.create () in
          let fibers =
            [ on_termination server ~deadline:shutdown_timeout ~ready ]
          in
          let on_listen address =
            Braid_sync.Promise.await ready;
            match address with
            | Unix.ADDR_INET (ip, port) ->
                Printf.printf
                  "braid: serving http://%s:%d/%s%s with %d loop%s\n%!"
                  (match Unix.string_of_inet_addr ip with
                  | s when String.contains s ':' -> "[" ^ s ^ "]"
                  | s -> s)
                  port
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
      value & opt string "127.0.0.1"
      & info [ "host" ] ~docv:"ADDR"
          ~doc:
            "Listen on $(docv), an IPv4 or IPv6 literal ($(b,0.0.0.0) for all \
             interfaces).")
  in
  let port =
    Arg.(
      value & opt int 8080
      & info [ "p"; "port" ] ~docv:"PORT"
          ~doc:
            "Listen on TCP port $(docv); 0 lets the system choose (printed at \
             start).")
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
             Without it, such requests get 404.")
  in
  let domains =
    Arg.(
      value & opt int 1
      & info [ "domains" ] ~docv:"N"
          ~doc:
            "Run $(docv) event loops, one per domain, each accepting on its \
             own socket bound with SO_REUSEPORT: the kernel spreads \
             connections among them.")
  in
  let demo =
    Arg.(
      value & flag
      & info [ "demo" ]
          ~doc:
            "Add the demonstration routes: $(b,POST /reverse) answers the body \
             reversed byte-wise; $(b,GET /fib/)$(i,n) computes the $(i,n)th \
             Fibonacci number (0 to 35) on a work-stealing pool of domains \
             while the event loop keeps serving.")
  in
  let max_body =
    Arg.(
      value
      & opt int Braid_http.Limits.default.max_body
      & info [ "max-body" ] ~docv:"BYTES"
          ~doc:"Refuse request bodies larger than $(docv) with 413.")
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
             or $(b,debug)) to standard error.")
  in
  let access_log =
    Arg.(
      value & flag
      & info [ "access-log" ]
          ~doc:"Write an access log in Combined Log Format to standard output.")
  in
  let seconds name ~doc =
    Arg.(value & opt (some float) None & info [ name ] ~docv:"SECONDS" ~doc)
  in
  let flags =
    let make header_timeout keep_alive_timeout body_timeout handler_timeout
        max_connections =
      {
        header_timeout;
        keep_alive_timeout;
        body_timeout;
        handler_timeout;
        max_connections;
      }
    in
    Term.(
      const make
      $ seconds "header-timeout"
          ~doc:
            (Printf.sprintf
               "A client has $(docv) to send a whole request head \
                (default                 %g), counted from the connection's \
                start for the first                 request and from the first \
                byte for later ones, however                 slowly it \
                trickles; then it gets 408 and is closed."
               Config.default.timeouts.request_header)
      $ seconds "keep-alive-timeout"
          ~doc:
            (Printf.sprintf
               "Close an idle keep-alive connection after $(docv) \
                (default                 %g)."
               Config.default.timeouts.keep_alive)
      $ seconds "body-timeout"
          ~doc:
            (Printf.sprintf
               "Each read of a request body may wait $(docv) (default %g); \
                a                 stalled upload gets 408 and is closed."
               Config.default.timeouts.body)
      $ seconds "handler-timeout"
          ~doc:
            "Answer 503 to a request whose handler runs longer than \
             $(docv),              and cancel the handler (default: no limit)."
      $ Arg.(
          value
          & opt (some int) None
          & info [ "max-connections" ] ~docv:"N"
              ~doc:
                (Printf.sprintf
                   "Serve at most $(docv) connections at once over all \
                    loops                     (default %d); further ones wait \
                    in the kernel's backlog."
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
        (const serve $ host $ port $ root $ domains $ demo $ max_body
       $ log_level $ access_log $ flags $ shutdown_timeout))

let () =
  let doc = "Braid: OCaml 5 concurrency and an HTTP/1.1 server" in
  let info = Cmd.info "braid" ~doc in
  let default = Term.(ret (const (`Help (`Auto, None)))) in
  exit (Cmd.eval (Cmd.group ~default info [ serve_cmd ]))
