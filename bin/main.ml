(* The [braid] command. Subcommands are terms of their own, so more can be
   added (and [serve] can grow options such as --config) without touching
   the others. *)

open Cmdliner
open Braid_server

let serve host port root domains demo max_body log_level access_log =
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
          let on_listen = function
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
            match Server.run ~on_listen server with
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
      `P "SIGINT or SIGTERM ends it at once: connections in progress are dropped.";
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
       $ log_level $ access_log))

let () =
  let doc = "Braid: OCaml 5 concurrency and an HTTP/1.1 server" in
  let info = Cmd.info "braid" ~doc in
  let default = Term.(ret (const (`Help (`Auto, None)))) in
  exit (Cmd.eval (Cmd.group ~default info [ serve_cmd ]))
