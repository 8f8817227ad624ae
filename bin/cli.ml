open Cmdliner
open Braid_server
open Braid_web

(* {1 Options that set the configuration} *)

(* [--NAME VALUE] as a setting; absent, none. *)
let setting ?(short = []) name value_conv ~docv ~doc change =
  let origin = Printf.sprintf "option '--%s'" name in
  let value =
    Arg.(
      value & opt (some value_conv) None & info (short @ [ name ]) ~docv ~doc)
  in
  Term.(
    const (Option.map (fun v -> { Layer.origin; change = change v })) $ value)

(* The terms' values in order: Cmdliner combines terms one at a time. *)
let all terms =
  List.fold_right
    (fun t rest -> Term.(const List.cons $ t $ rest))
    terms (Term.const [])

(* [--NAME FILE], repeatable: the files in order as one setting. *)
let files name ~doc change =
  let origin = Printf.sprintf "option '--%s'" name in
  let value =
    Arg.(value & opt_all string [] & info [ name ] ~docv:"FILE" ~doc)
  in
  Term.(
    const (function
      | [] -> None
      | files -> Some { Layer.origin; change = change files })
    $ value)

let ip_address =
  Arg.conv' ~docv:"ADDR"
    ( Config_file.ip_address,
      fun ppf ip -> Format.pp_print_string ppf (Unix.string_of_inet_addr ip) )

let port = Arg.conv' ~docv:"PORT" (Config_file.port, Format.pp_print_int)

(* "-" is standard output (the log writer reopens it like any path). *)
let log_path = function "-" -> "/dev/stdout" | p -> p

(* A whole number, or "off" for none, as the file's MaxConnectionsPerClient. *)
let cap_or_off =
  let print ppf = function
    | None -> Format.pp_print_string ppf "off"
    | Some n -> Format.pp_print_int ppf n
  in
  Arg.conv' ~docv:"N|off" (Config_file.cap_or_off, print)

let default_host, default_port =
  match Config.default.listen with
  | Unix.ADDR_INET (ip, port) -> (Unix.string_of_inet_addr ip, port)
  | Unix.ADDR_UNIX path -> (path, 0)

(* Durations as the configuration file reads them ({!Config_file.duration});
   Cmdliner prefixes the error with the option. *)
let duration ?zero () =
  let print ppf s =
    (* Whole milliseconds, as parsed: at most three decimals, none if 0. *)
    let text = Printf.sprintf "%.3f" s in
    let n = ref (String.length text) in
    while text.[!n - 1] = '0' do
      decr n
    done;
    if text.[!n - 1] = '.' then decr n;
    Format.pp_print_string ppf (String.sub text 0 !n)
  in
  Arg.conv' ~docv:"SECONDS" (Config_file.duration ?zero ~name:"the value", print)

let seconds name ~doc change =
  setting name (duration ()) ~docv:"SECONDS" ~doc change

let defaults = Config.default.timeouts

let flags =
  Term.(
    const (List.filter_map Fun.id)
    $ all
        [
          setting "host" ip_address ~docv:"ADDR" Layer.host
            ~doc:
              (Printf.sprintf
                 "Listen on $(docv), an IPv4 or IPv6 literal ($(b,0.0.0.0) for \
                  all interfaces). Default: the configuration file's \
                  $(b,Listen), else %s."
                 default_host);
          setting ~short:[ "p" ] "port" port ~docv:"PORT" Layer.port
            ~doc:
              (Printf.sprintf
                 "Listen on TCP port $(docv); 0 lets the system choose \
                  (printed at start). Default: the configuration file's \
                  $(b,Listen), else %d."
                 default_port);
          setting "tls-port" port ~docv:"PORT"
            (fun p -> Layer.tls_address (None, p))
            ~doc:
              "Serve HTTPS on TCP port $(docv) (on $(b,--host)'s address), \
               beside plain HTTP on $(b,--port). Default: the configuration \
               file's $(b,TlsListen), else 8443 once a certificate is given.";
          files "tls-cert" Layer.tls_chains
            ~doc:
              "Serve HTTPS with the certificate chain in $(docv) (PEM: the \
               certificate, then its intermediates), whose key is the \
               $(b,--tls-key) of the same rank. Repeat both for several \
               certificates: a client asking for a name (SNI) gets the first \
               whose names match it, else the first. TLS 1.2 and 1.3, ALPN h2 \
               and http/1.1, session tickets; SIGHUP re-reads the files. \
               Default: the configuration file's $(b,TlsCertificate) \
               (comma-separated).";
          files "tls-key" Layer.tls_keys
            ~doc:
              "The private key (PEM, unencrypted) of the $(b,--tls-cert) of \
               the same rank. Default: the configuration file's \
               $(b,TlsCertificateKey).";
          setting "https-redirect"
            (Arg.enum [ ("on", true); ("off", false) ])
            ~docv:"on|off" Layer.https_redirect
            ~doc:
              "With $(b,on), plain HTTP requests get 308 Permanent Redirect to \
               the same URL over HTTPS (the metrics and health paths \
               excepted). Default: the configuration file's \
               $(b,HttpsRedirect), else off.";
          setting "root" Arg.dir ~docv:"DIR" Layer.root
            ~doc:
              "Serve the files under $(docv) for GET and HEAD requests that no \
               route matches. Paths that would leave $(docv) (dot-segments, \
               encoded slashes, symbolic links pointing outside) are refused. \
               Default: the configuration file's $(b,DocumentRoot), else none: \
               such requests get 404.";
          setting "metrics" Arg.string ~docv:"PATH" Layer.metrics_path
            ~doc:
              "Answer GET $(docv) with the server's metrics in the Prometheus \
               text format (requests by method and status class, a duration \
               histogram, connections, the GC, the blocking pool), to loopback \
               clients or those of $(b,--metrics-allow). Default: the \
               configuration file's $(b,MetricsPath), else no metrics.";
          setting "metrics-allow"
            Arg.(list ip_address)
            ~docv:"IP,..." Layer.metrics_allow
            ~doc:
              "The client addresses $(b,--metrics) answers (others get 403). \
               Default: the configuration file's $(b,MetricsAllow), else \
               loopback only.";
          setting "health" Arg.string ~docv:"PATH" Layer.health_path
            ~doc:
              "Answer GET $(docv) with 200 while serving and 503 once shutting \
               down, for a load balancer's health checks. Default: the \
               configuration file's $(b,HealthPath), else none.";
          setting "precompressed"
            (Arg.enum [ ("on", true); ("off", false) ])
            ~docv:"on|off" Layer.precompressed
            ~doc:
              "With $(b,on), a static file $(i,F) is answered with $(i,F).br \
               or $(i,F).gz (in that order of preference) when that regular \
               file exists beside it and the request's Accept-Encoding accepts \
               the coding, with Content-Encoding and Vary: Accept-Encoding; \
               never for a Range request. Default: the configuration file's \
               $(b,Precompressed), else off.";
          setting "http2"
            (Arg.enum [ ("on", true); ("off", false) ])
            ~docv:"on|off" Layer.http2_enabled
            ~doc:
              "Serve HTTP/2: over TLS to clients choosing h2 by ALPN (offered \
               before http/1.1), and in cleartext (h2c) to clients opening \
               with the HTTP/2 preface. Default: the configuration file's \
               $(b,Http2), else on.";
          setting "http2-max-streams" Arg.int ~docv:"N" Layer.http2_max_streams
            ~doc:
              (Printf.sprintf
                 "Streams an HTTP/2 client may have open at once \
                  (SETTINGS_MAX_CONCURRENT_STREAMS; a stream counts until its \
                  handler ends, even once reset); more are refused. Default: \
                  the configuration file's $(b,Http2MaxConcurrentStreams), \
                  else %d."
                 Config.default_http2.max_concurrent_streams);
          setting "http2-stream-window" Arg.int ~docv:"BYTES"
            Layer.http2_stream_window
            ~doc:
              (Printf.sprintf
                 "Request body an HTTP/2 stream may send ahead of its \
                  handler's reads (SETTINGS_INITIAL_WINDOW_SIZE). Default: the \
                  configuration file's $(b,Http2StreamWindow), else %d."
                 Config.default_http2.stream_window);
          setting "http2-connection-window" Arg.int ~docv:"BYTES"
            Layer.http2_connection_window
            ~doc:
              (Printf.sprintf
                 "The same for a whole HTTP/2 connection. Default: the \
                  configuration file's $(b,Http2ConnectionWindow), else %d."
                 Config.default_http2.connection_window);
          setting "http2-max-header-list" Arg.int ~docv:"BYTES"
            Layer.http2_max_header_list
            ~doc:
              (Printf.sprintf
                 "Largest HTTP/2 request header list \
                  (SETTINGS_MAX_HEADER_LIST_SIZE; larger ones get 431); a \
                  field block over twice this encoded, or in more than 64 \
                  frames, ends the connection. Default: the configuration \
                  file's $(b,Http2MaxHeaderListSize), else %d."
                 Config.default_http2.max_header_list_size);
          setting "http2-control-budget" Arg.int ~docv:"N"
            Layer.http2_control_budget
            ~doc:
              (Printf.sprintf
                 "Control frames (SETTINGS, PING, WINDOW_UPDATE, PRIORITY, \
                  empty DATA) an HTTP/2 connection may send beyond what its \
                  requests earn back (a tenth refills each second); past it, \
                  GOAWAY ENHANCE_YOUR_CALM. Default: the configuration file's \
                  $(b,Http2ControlFrameBudget), else %d."
                 Config.default_http2.control_frame_budget);
          setting "http2-reset-budget" Arg.int ~docv:"N"
            Layer.http2_reset_budget
            ~doc:
              (Printf.sprintf
                 "Streams an HTTP/2 client may reset before their response is \
                  complete, beyond those that complete (a tenth refills each \
                  second); past it, GOAWAY ENHANCE_YOUR_CALM (rapid reset, \
                  CVE-2023-44487). Default: the configuration file's \
                  $(b,Http2ResetBudget), else %d."
                 Config.default_http2.reset_budget);
          setting "domains" Arg.int ~docv:"N" Layer.domains
            ~doc:
              (Printf.sprintf
                 "Run $(docv) event loops, one per domain, all accepting on \
                  the one listening socket (which SIGUSR2 hands to a new \
                  process). Default: the configuration file's $(b,Domains), \
                  else %d."
                 Config.default.domains);
          setting "max-body" Arg.int ~docv:"BYTES" Layer.max_body
            ~doc:
              (Printf.sprintf
                 "Refuse request bodies larger than $(docv) with 413 (default: \
                  the configuration file's $(b,MaxBodySize), else %d)."
                 Config.default.limits.max_body);
          setting "body-spool-budget" Arg.int ~docv:"BYTES"
            (fun n -> Layer.spool_budget (Some n))
            ~doc:
              "Hold at most $(docv) bytes of request bodies spooled to disk at \
               once over the whole server; a body that would pass it is \
               answered 503 with Retry-After (413 if it alone is larger). \
               Default: the configuration file's $(b,BodySpoolBudget), else a \
               quarter of the free space of the body temporary directory at \
               start and reload, at most 1 GiB.";
          setting "max-connections" Arg.int ~docv:"N" Layer.max_connections
            ~doc:
              "Serve at most $(docv) connections at once over all loops \
               (default: the configuration file's $(b,MaxConnections), else \
               derived from the descriptor limit, which $(tname) raises to its \
               hard limit at start: 90% of it, less 64). At the limit, a new \
               client is admitted by closing a connection that has waited a \
               second or more for a request: one that has sent nothing first, \
               an idle keep-alive one only while none of those waits; a \
               connection in use is never closed. Meanwhile new clients wait.";
          setting "max-connections-per-client" cap_or_off ~docv:"N|off"
            Layer.max_connections_per_client
            ~doc:
              "Serve at most $(docv) connections at once from one client \
               address, loopback ones included; a further one is answered 503 \
               and closed. $(b,off): no cap, as behind a load balancer on \
               another host, whose address all clients share. Default: the \
               configuration file's $(b,MaxConnectionsPerClient), else 256 \
               from every address but loopback ones.";
          seconds "header-timeout" Layer.request_header_timeout
            ~doc:
              (Printf.sprintf
                 "A client has $(docv) to send a whole request head (default: \
                  the configuration file's $(b,RequestHeaderTimeout), else its \
                  $(b,Timeout), else %g), counted from the connection's start \
                  for the first request and from the first byte for later \
                  ones, however slowly it trickles; then it gets 408 and is \
                  closed."
                 defaults.request_header);
          seconds "keep-alive-timeout" Layer.keep_alive_timeout
            ~doc:
              (Printf.sprintf
                 "Close an idle keep-alive connection after $(docv) (default: \
                  the configuration file's $(b,KeepAliveTimeout), else %g)."
                 defaults.keep_alive);
          seconds "body-timeout" Layer.body_timeout
            ~doc:
              (Printf.sprintf
                 "Each read of a request body may wait $(docv) (default: the \
                  configuration file's $(b,Timeout), else %g); a stalled \
                  upload gets 408 and is closed."
                 defaults.body);
          seconds "send-timeout" Layer.send_timeout
            ~doc:
              (Printf.sprintf
                 "Each write of a response may wait $(docv) for the client to \
                  take data (default: the configuration file's $(b,Timeout), \
                  else %g); a client that stops reading is closed."
                 defaults.send);
          seconds "handler-timeout"
            (fun s -> Layer.handler_timeout (Some s))
            ~doc:
              "Answer 503 to a request whose handler runs longer than $(docv), \
               and cancel the handler (default: the configuration file's \
               $(b,HandlerTimeout), else no limit).";
          setting "access-log" Arg.string ~docv:"FILE"
            (fun p -> Layer.access_log (Some (log_path p)))
            ~doc:
              "Append an access log in Combined Log Format to $(docv) ($(b,-): \
               standard output). Default: the configuration file's \
               $(b,AccessLog), else none.";
          setting "error-log" Arg.string ~docv:"FILE"
            (fun p -> Layer.error_log (Some (log_path p)))
            ~doc:
              "Append messages to $(docv) ($(b,-): standard output). Default: \
               the configuration file's $(b,ErrorLog), else standard error.";
        ])

let config ?(defaults = Config.default) ~file flags =
  let file_layer = Option.fold ~none:[] ~some:Config_file.layer file in
  Layer.resolve ~defaults [ file_layer; flags ]

(* {1 The other options} *)

let config_file =
  Arg.(
    value
    & opt (some file) None
    & info [ "c"; "config" ] ~docv:"FILE"
        ~doc:
          (Printf.sprintf
             "Read Apache-like directives from $(docv) (%s; see \
              docs/server.md). Command-line options override it. SIGHUP \
              re-reads it."
             (String.concat ", "
                (List.map (Printf.sprintf "$(b,%s)") Config_file.directive_names))))

let demo =
  Arg.(
    value & flag
    & info [ "demo" ]
        ~doc:
          "Add the demonstration routes: $(b,POST /reverse) answers the body \
           reversed byte-wise; $(b,GET /fib/)$(i,n) computes the $(i,n)th \
           Fibonacci number (0 to 35) on a work-stealing pool of domains while \
           the event loop keeps serving; $(b,GET /sleep/)$(i,ms) answers after \
           $(i,ms) milliseconds (a slow request).")

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

let shutdown_timeout =
  Arg.(
    value
    & opt (duration ~zero:true ()) 10.
    & info [ "shutdown-timeout" ] ~docv:"SECONDS"
        ~doc:
          "On SIGTERM or SIGINT, stop accepting, let requests in progress \
           finish for up to $(docv), then close the rest and exit 0. A second \
           signal ends it at once.")

let io_backend =
  let backends = [ ("uring", Braid_io.Uring); ("epoll", Braid_io.Epoll) ] in
  Arg.(
    value
    & opt (some (enum backends)) None
    & info [ "io-backend" ] ~docv:"uring|epoll"
        ~doc:
          "What the event loops wait in: $(b,epoll), or an io_uring ring \
           ($(b,uring); Linux 5.11 or later). If the kernel refuses io_uring \
           (too old, $(b,kernel.io_uring_disabled), a seccomp filter), the \
           loops use epoll and one line on standard error says why. Default: \
           the configuration file's $(b,IoBackend), else the environment's \
           $(b,BRAID_IO_BACKEND), else epoll. Changing it needs a restart.")

let dev =
  Arg.(
    value & flag
    & info [ "dev" ]
        ~doc:
          "Development: serve HTTPS too, with a self-signed certificate for \
           localhost, 127.0.0.1 and ::1 made on first use (EC P-256, 30 days, \
           made anew when it nears its end) and kept in \
           $(b,\\$XDG_STATE_HOME)/braid/dev-certificate (else \
           $(b,~/.local/state)/braid/dev-certificate). Its path is printed at \
           start: trust it in the client ($(b,curl --cacert) $(i,FILE)). \
           $(b,--tls-cert) and $(b,--tls-key) win over it; the HTTPS port is \
           $(b,--tls-port), else 8443. Never in production.")

let dev_layer () =
  let dir = Braid_tls.Dev_certificate.default_directory () in
  match Braid_tls.Dev_certificate.ensure ~dir () with
  | Error msg -> Error ("--dev: " ^ msg)
  | Ok cert ->
      let origin = "option '--dev'" in
      Ok
        ( cert,
          [
            { Layer.origin; change = Layer.tls_chains [ cert.certificate ] };
            { Layer.origin; change = Layer.tls_keys [ cert.key ] };
          ] )
