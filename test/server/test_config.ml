(* The configuration file: every directive of the table, every kind of
   error with its exact "file:line: message", and the precedence of the
   command line over the file over the defaults, with the checks of
   Server.check_config blamed on the setting that fails them. *)

open Braid_server
open Braid_web
open Braid_cli
open Text_and_process

let parse text = Config_file.parse ~file:"/etc/braid.conf" text

let error_is text expected () =
  match parse text with
  | Ok _ -> Alcotest.failf "accepted %S" text
  | Error msg -> Alcotest.(check string) "message" expected msg

let ok text =
  match parse text with
  | Ok f -> f
  | Error msg -> Alcotest.failf "rejected: %s" msg

(* The file's settings over [base], unchecked. *)
let applied ?(base = Config.default) text =
  Layer.apply (Config_file.layer (ok text)) base

let address ip port = Unix.ADDR_INET (Unix.inet_addr_of_string ip, port)

let address_text = function
  | Unix.ADDR_INET (ip, port) ->
      Printf.sprintf "%s port %d" (Unix.string_of_inet_addr ip) port
  | Unix.ADDR_UNIX path -> path

let check_listen what expected (c : Config.t) =
  Alcotest.(check string) what (address_text expected) (address_text c.listen)

(* {1 The table of directives} *)

(* For each directive: an argument, and what it must set (from the defaults).
   [table_covered] checks that no directive of the table is missing here. *)
let samples : (string * string * (Config.t -> unit)) list =
  let seconds = Alcotest.(float 0.) in
  [
    ("Listen", "0.0.0.0:8081", check_listen "Listen" (address "0.0.0.0" 8081));
    ("Domains", "3", fun c -> Alcotest.(check int) "Domains" 3 c.domains);
    ( "IoBackend",
      "Uring",
      fun c ->
        Alcotest.(check bool)
          "IoBackend" true
          (c.io_backend = Some Braid_io.Uring) );
    ( "DocumentRoot",
      "\"/srv/my site\"",
      fun c ->
        Alcotest.(check (option string))
          "DocumentRoot" (Some "/srv/my site") c.root );
    ( "Precompressed",
      "ON",
      fun c -> Alcotest.(check bool) "Precompressed" true c.precompressed );
    ( "MetricsPath",
      "/metrics",
      fun c ->
        Alcotest.(check (option string))
          "MetricsPath" (Some "/metrics") c.metrics_path );
    ( "MetricsAllow",
      "10.0.0.1,::1",
      fun c ->
        Alcotest.(check (list string))
          "MetricsAllow" [ "10.0.0.1"; "::1" ]
          (List.map Unix.string_of_inet_addr c.metrics_allow) );
    ( "TlsListen",
      "[::1]:8444",
      fun c ->
        match c.tls with
        | Some tls ->
            Alcotest.(check string)
              "TlsListen"
              (address_text (address "::1" 8444))
              (address_text tls.address)
        | None -> Alcotest.fail "TlsListen: HTTPS off" );
    ( "TlsCertificate",
      "a.pem,/srv/b.pem",
      fun c ->
        Alcotest.(check (list string))
          "TlsCertificate: the chains, paired with no key yet"
          [ "/etc/a.pem"; "/srv/b.pem" ]
          (List.map
             (fun (x : Braid_tls.Server_context.certificate) -> x.chain)
             (Option.get c.tls).certificates) );
    ( "TlsCertificateKey",
      "a.key",
      fun c ->
        Alcotest.(check (list string))
          "TlsCertificateKey" [ "/etc/a.key" ]
          (List.map
             (fun (x : Braid_tls.Server_context.certificate) -> x.key)
             (Option.get c.tls).certificates) );
    ( "HttpsRedirect",
      "on",
      fun c ->
        Alcotest.(check bool) "HttpsRedirect" true (Option.get c.tls).redirect
    );
    ( "HealthPath",
      "/health",
      fun c ->
        Alcotest.(check (option string))
          "HealthPath" (Some "/health") c.health_path );
    ( "Http2",
      "off",
      fun c -> Alcotest.(check bool) "Http2" false c.http2.enabled );
    ( "Http2MaxConcurrentStreams",
      "7",
      fun c ->
        Alcotest.(check int)
          "Http2MaxConcurrentStreams" 7 c.http2.max_concurrent_streams );
    ( "Http2StreamWindow",
      "70000",
      fun c ->
        Alcotest.(check int) "Http2StreamWindow" 70000 c.http2.stream_window );
    ( "Http2ConnectionWindow",
      "2000000",
      fun c ->
        Alcotest.(check int)
          "Http2ConnectionWindow" 2000000 c.http2.connection_window );
    ( "Http2MaxHeaderListSize",
      "20000",
      fun c ->
        Alcotest.(check int)
          "Http2MaxHeaderListSize" 20000 c.http2.max_header_list_size );
    ( "Http2ControlFrameBudget",
      "300",
      fun c ->
        Alcotest.(check int)
          "Http2ControlFrameBudget" 300 c.http2.control_frame_budget );
    ( "Http2ResetBudget",
      "40",
      fun c -> Alcotest.(check int) "Http2ResetBudget" 40 c.http2.reset_budget
    );
    ( "MaxConnections",
      "50",
      fun c -> Alcotest.(check int) "MaxConnections" 50 c.max_connections );
    ( "MaxBodySize",
      "0",
      fun c -> Alcotest.(check int) "MaxBodySize" 0 c.limits.max_body );
    ( "MaxConnectionsPerClient",
      "8",
      fun c ->
        Alcotest.(check bool)
          "MaxConnectionsPerClient" true
          (c.max_connections_per_client = Cap 8) );
    ( "BodyBufferSize",
      "4096",
      fun c -> Alcotest.(check int) "BodyBufferSize" 4096 c.body_buffer );
    ( "BodyTempDirectory",
      "spool",
      fun c ->
        Alcotest.(check string)
          "BodyTempDirectory, relative" "/etc/spool" c.body_temp_dir );
    ( "BodySpoolBudget",
      "1000000",
      fun c ->
        Alcotest.(check (option int))
          "BodySpoolBudget" (Some 1_000_000) c.spool_budget );
    ( "Timeout",
      "30",
      fun c ->
        Alcotest.check seconds "Timeout: head" 30. c.timeouts.request_header;
        Alcotest.check seconds "Timeout: body" 30. c.timeouts.body;
        Alcotest.check seconds "Timeout: send" 30. c.timeouts.send );
    ( "RequestHeaderTimeout",
      "2.5",
      fun c ->
        Alcotest.check seconds "RequestHeaderTimeout" 2.5
          c.timeouts.request_header );
    ( "KeepAliveTimeout",
      "3",
      fun c ->
        Alcotest.check seconds "KeepAliveTimeout" 3. c.timeouts.keep_alive );
    ( "HandlerTimeout",
      "4",
      fun c ->
        Alcotest.(check (option (float 0.)))
          "HandlerTimeout" (Some 4.) c.timeouts.handler );
    ( "AccessLog",
      "logs/access.log",
      fun c ->
        Alcotest.(check (option string))
          "AccessLog, relative" (Some "/etc/logs/access.log") c.access_log );
    ( "ErrorLog",
      "\"/var/log/braid \\\"error\\\".log\"",
      fun c ->
        Alcotest.(check (option string))
          "ErrorLog, escaped quotes" (Some "/var/log/braid \"error\".log")
          c.error_log );
  ]

let table_covered () =
  let sorted l = List.sort compare l in
  Alcotest.(check (list string))
    "directives with a sample"
    (sorted Config_file.directive_names)
    (sorted (List.map (fun (name, _, _) -> name) samples))

(* Each directive alone, under its canonical name and in other cases. *)
let each_directive () =
  List.iter
    (fun (name, argument, check) ->
      List.iter
        (fun spelling ->
          let f = ok (Printf.sprintf "%s %s\n" spelling argument) in
          Alcotest.(check (list (pair string int)))
            (spelling ^ ": canonical name and line")
            [ (name, 1) ]
            (List.map
               (fun (d : Config_file.directive) -> (d.name, d.line))
               f.directives);
          check (Layer.apply (Config_file.layer f) Config.default))
        [ name; String.lowercase_ascii name; String.uppercase_ascii name ])
    samples

(* Each directive twice (in another case the second time) is refused. *)
let each_duplicate () =
  List.iter
    (fun (name, argument, _) ->
      error_is
        (Printf.sprintf "%s %s\n# again\n%s %s\n" name argument
           (String.lowercase_ascii name)
           argument)
        (Printf.sprintf "/etc/braid.conf:3: duplicate %s (first at line 1)" name)
        ())
    samples

(* All of them in one file, with comments, blanks and odd cases. *)
let all_directives () =
  let f =
    ok
      {|# A comment, then a blank line

  listen 127.0.0.1:8081
DOMAINS 2
DocumentRoot "/srv/my site"
MaxConnections 50
MaxBodySize 0
Timeout 30
RequestHeaderTimeout 2.5
KeepAliveTimeout 3
HandlerTimeout off
AccessLog logs/access.log
ErrorLog "/var/log/braid \"error\".log"
|}
  in
  Alcotest.(check (list (pair string int)))
    "lines"
    [
      ("Listen", 3);
      ("Domains", 4);
      ("DocumentRoot", 5);
      ("MaxConnections", 6);
      ("MaxBodySize", 7);
      ("Timeout", 8);
      ("RequestHeaderTimeout", 9);
      ("KeepAliveTimeout", 10);
      ("HandlerTimeout", 11);
      ("AccessLog", 12);
      ("ErrorLog", 13);
    ]
    (List.map
       (fun (d : Config_file.directive) -> (d.name, d.line))
       f.directives);
  let c = Layer.apply (Config_file.layer f) Config.default in
  check_listen "listen" (address "127.0.0.1" 8081) c;
  Alcotest.(check int) "domains" 2 c.domains;
  Alcotest.(check (option string)) "config root" (Some "/srv/my site") c.root;
  Alcotest.(check int) "max connections" 50 c.max_connections;
  Alcotest.(check int) "max body" 0 c.limits.max_body;
  Alcotest.(check (float 0.)) "request header" 2.5 c.timeouts.request_header;
  Alcotest.(check (float 0.)) "body = Timeout" 30. c.timeouts.body;
  Alcotest.(check (float 0.)) "send = Timeout" 30. c.timeouts.send;
  Alcotest.(check (float 0.)) "keep-alive" 3. c.timeouts.keep_alive;
  Alcotest.(check (option (float 0.))) "handler" None c.timeouts.handler;
  Alcotest.(check (option string))
    "relative access log" (Some "/etc/logs/access.log") c.access_log;
  Alcotest.(check (option string))
    "escaped quotes" (Some "/var/log/braid \"error\".log") c.error_log

let listen_forms () =
  check_listen "port: the default host" (address "127.0.0.1" 80)
    (applied "Listen 80");
  check_listen "ipv6" (address "::1" 8080) (applied "Listen [::1]:8080");
  check_listen "quoted" (address "0.0.0.0" 0) (applied "Listen \"0.0.0.0:0\"")

let keywords () =
  let c = applied "HandlerTimeout OFF\nAccessLog Off\nErrorLog STDERR\n" in
  Alcotest.(check (option (float 0.))) "handler" None c.timeouts.handler;
  Alcotest.(check (option string)) "access log" None c.access_log;
  Alcotest.(check (option string)) "error log" None c.error_log

(* RequestHeaderTimeout wins over Timeout wherever each is in the file. *)
let request_header_wins () =
  List.iter
    (fun text ->
      let c = applied text in
      Alcotest.(check (float 0.)) "request header" 2. c.timeouts.request_header;
      Alcotest.(check (float 0.)) "body" 7. c.timeouts.body;
      Alcotest.(check (float 0.)) "send" 7. c.timeouts.send)
    [
      "Timeout 7\nRequestHeaderTimeout 2\n";
      "RequestHeaderTimeout 2\nTimeout 7\n";
    ]

(* What the file leaves out keeps the base's value. *)
let absent_directives () =
  let base =
    {
      Config.default with
      timeouts = { Config.default.timeouts with handler = Some 9. };
    }
  in
  let c = applied ~base "Timeout 7\n" in
  Alcotest.(check (float 0.)) "request header" 7. c.timeouts.request_header;
  Alcotest.(check (float 0.)) "body" 7. c.timeouts.body;
  Alcotest.(check (float 0.)) "send" 7. c.timeouts.send;
  Alcotest.(check (float 0.))
    "keep-alive" Config.default.timeouts.keep_alive c.timeouts.keep_alive;
  Alcotest.(check (option (float 0.))) "handler" (Some 9.) c.timeouts.handler;
  Alcotest.(check int)
    "max connections" Config.default.max_connections c.max_connections;
  check_listen "listen" Config.default.listen c

(* {1 Precedence: command line > file > defaults} *)

let temp_dir () = Unix.realpath (Filename.temp_dir "braid-conf" "")

(* The flags of [braid serve] as the command line would give them. *)
let flags args =
  let cmd = Cmdliner.Cmd.v (Cmdliner.Cmd.info "serve") Cli.flags in
  match Cmdliner.Cmd.eval_value ~argv:(Array.of_list ("serve" :: args)) cmd with
  | Ok (`Ok layer) -> layer
  | _ -> Alcotest.failf "options refused: %s" (String.concat " " args)

(* The error Cmdliner reports for [args], on one line. *)
let flags_error args =
  let cmd =
    Cmdliner.Cmd.v
      (Cmdliner.Cmd.info "serve")
      Cmdliner.Term.(const (fun _ _ -> ()) $ Cli.flags $ Cli.shutdown_timeout)
  in
  let b = Buffer.create 256 in
  let err = Format.formatter_of_buffer b in
  Format.pp_set_margin err 10_000;
  match
    Cmdliner.Cmd.eval_value ~err ~argv:(Array.of_list ("serve" :: args)) cmd
  with
  | Ok (`Ok ()) ->
      Alcotest.failf "options accepted: %s" (String.concat " " args)
  | _ ->
      Format.pp_print_flush err ();
      List.hd (String.split_on_char '\n' (Buffer.contents b))

let configure ?file args =
  Cli.config
    ~file:
      (Option.map
         (fun file ->
           match Config_file.load file with
           | Ok f -> f
           | Error msg -> Alcotest.fail msg)
         file)
    (flags args)

let configured ?file args =
  match configure ?file args with Ok c -> c | Error msg -> Alcotest.fail msg

(* A directory with two roots and a file that sets every value the flags of
   the test set too. *)
let precedence_site () =
  let dir = temp_dir () in
  Unix.mkdir (dir ^ "/www") 0o755;
  Unix.mkdir (dir ^ "/other") 0o755;
  let file = dir ^ "/braid.conf" in
  write_file file
    "Listen 0.0.0.0:9001\n\
     Domains 3\n\
     DocumentRoot www\n\
     Timeout 7\n\
     AccessLog access.log\n\
     ErrorLog error.log\n";
  (dir, file)

let defaults_alone () =
  let c = configured [] in
  check_listen "listen" (address "127.0.0.1" 8080) c;
  Alcotest.(check int) "domains" 1 c.domains;
  Alcotest.(check (option string)) "root" None c.root;
  Alcotest.(check (float 0.)) "request header" 20. c.timeouts.request_header;
  Alcotest.(check (option string)) "access log" None c.access_log;
  Alcotest.(check (option string)) "error log" None c.error_log

let file_beats_defaults () =
  let dir, file = precedence_site () in
  let c = configured ~file [] in
  check_listen "listen" (address "0.0.0.0" 9001) c;
  Alcotest.(check int) "domains" 3 c.domains;
  Alcotest.(check (option string)) "root" (Some (dir ^ "/www")) c.root;
  Alcotest.(check (float 0.)) "request header" 7. c.timeouts.request_header;
  Alcotest.(check (float 0.))
    "keep-alive, not in the file" Config.default.timeouts.keep_alive
    c.timeouts.keep_alive;
  Alcotest.(check (option string))
    "access log"
    (Some (dir ^ "/access.log"))
    c.access_log;
  Alcotest.(check (option string))
    "error log"
    (Some (dir ^ "/error.log"))
    c.error_log

let flags_beat_file () =
  let dir, file = precedence_site () in
  let c =
    configured ~file
      [
        "--port";
        "9002";
        "--domains";
        "2";
        "--root";
        dir ^ "/other";
        "--header-timeout";
        "3";
        "--access-log";
        "-";
        "--error-log";
        dir ^ "/flag.log";
      ]
  in
  check_listen "the flag's port, the file's host" (address "0.0.0.0" 9002) c;
  Alcotest.(check int) "domains" 2 c.domains;
  Alcotest.(check (option string)) "root" (Some (dir ^ "/other")) c.root;
  Alcotest.(check (float 0.)) "request header" 3. c.timeouts.request_header;
  Alcotest.(check (float 0.)) "body: the file's Timeout" 7. c.timeouts.body;
  Alcotest.(check (option string))
    "access log: - is stdout" (Some "/dev/stdout") c.access_log;
  Alcotest.(check (option string))
    "error log"
    (Some (dir ^ "/flag.log"))
    c.error_log;
  let c = configured ~file [ "--host"; "::1" ] in
  check_listen "the flag's host, the file's port" (address "::1" 9001) c

let flags_beat_defaults () =
  Alcotest.(check (option int))
    "--body-spool-budget" (Some 5000)
    (configured [ "--body-spool-budget"; "5000" ]).spool_budget;
  let c = configured [ "--host"; "::1"; "--max-connections"; "7" ] in
  check_listen "listen" (address "::1" 8080) c;
  Alcotest.(check int) "max connections" 7 c.max_connections

(* check_config's errors are blamed on the setting that causes them, after
   the flags are applied. *)
let errors_blamed () =
  let dir = temp_dir () in
  let file = dir ^ "/braid.conf" in
  Unix.mkdir (dir ^ "/www") 0o755;
  write_file file "Timeout 5\nDocumentRoot www\n";
  Alcotest.(check (option string))
    "relative root"
    (Some (dir ^ "/www"))
    (configured ~file []).root;
  write_file file "Timeout 5\nDocumentRoot missing\n";
  let error_is what args expected =
    match configure ~file args with
    | Ok _ -> Alcotest.failf "%s: accepted" what
    | Error msg -> Alcotest.(check string) what expected msg
  in
  let missing_root =
    Printf.sprintf "%s:2: root %s/missing: No such file or directory" file dir
  in
  error_is "the file's line" [] missing_root;
  error_is "the file's line, under flags"
    [ "--port"; "9002"; "--header-timeout"; "3"; "--max-connections"; "9" ]
    missing_root;
  (* A flag wins over the file: here it repairs the root. *)
  Alcotest.(check (option string))
    "repaired by --root"
    (Some (dir ^ "/www"))
    (configured ~file [ "--root"; dir ^ "/www" ]).root;
  (* A flag wrong on its own is blamed, even over a bad file. *)
  error_is "a flag" [ "--domains"; "0" ]
    "option '--domains': the number of domains must be at least 1";
  (* A metrics or health path that no request target could equal was
     accepted from a flag (the file's MetricsPath refused it). *)
  error_is "a metrics path without /" [ "--metrics"; "metrics" ]
    "option '--metrics': metrics: \"metrics\" is not a path like /metrics";
  error_is "a health path with a query"
    [ "--health"; "/health?x" ]
    "option '--health': health: \"/health?x\" is not a path like /health";
  write_file file "Timeout 5\nDocumentRoot www\n";
  error_is "a flag, a good file"
    [ "--max-connections"; "0" ]
    "option '--max-connections': maximum connections must be positive";
  (match Config_file.load dir with
  | Ok _ -> Alcotest.fail "loaded a directory"
  | Error msg ->
      Alcotest.(check string) "a directory" (dir ^ ": Is a directory") msg);
  match Config_file.load (dir ^ "/nope.conf") with
  | Ok _ -> Alcotest.fail "loaded a missing file"
  | Error msg ->
      Alcotest.(check string)
        "missing file"
        (dir ^ "/nope.conf: No such file or directory")
        msg

(* Every duration is bounded (issue 14.2: 99999999999 s passed the checks,
   then wrapped around in nanoseconds): refused with the directive's line,
   the option's name, or by the API. *)
let durations_bounded () =
  let dir = temp_dir () in
  let file = dir ^ "/braid.conf" in
  let huge = "99999999999" in
  let refused what expected = function
    | Ok _ -> Alcotest.failf "%s: accepted" what
    | Error msg ->
        if not (contains msg expected) then
          Alcotest.failf "%s: %S does not say %S" what msg expected
  in
  let at_most = "must be at most 31536000 seconds (365 days)" in
  List.iter
    (fun directive ->
      write_file file
        (Printf.sprintf "MaxConnections 5\n%s %s\n" directive huge);
      refused directive
        (Printf.sprintf "%s:2: %s %s, not %s" file directive at_most huge)
        (Config_file.load file))
    [ "RequestHeaderTimeout"; "KeepAliveTimeout"; "Timeout"; "HandlerTimeout" ];
  List.iter
    (fun flag ->
      Alcotest.(check string)
        flag
        (Printf.sprintf "serve: option '%s': the value %s, not %s" flag at_most
           huge)
        (flags_error [ flag; huge ]))
    [
      "--header-timeout";
      "--keep-alive-timeout";
      "--body-timeout";
      "--send-timeout";
      "--handler-timeout";
      "--shutdown-timeout";
    ];
  (* The API: every field of the timeouts, the linger time, shutdown. *)
  let t = Config.default.timeouts in
  List.iter
    (fun (what, config) ->
      refused what at_most (Braid_server.Server.check_config config))
    [
      ( "request_header",
        { Config.default with timeouts = { t with request_header = 1e11 } } );
      ( "keep_alive",
        { Config.default with timeouts = { t with keep_alive = 1e11 } } );
      ("body", { Config.default with timeouts = { t with body = 1e11 } });
      ("send", { Config.default with timeouts = { t with send = 1e11 } });
      ( "handler",
        { Config.default with timeouts = { t with handler = Some 1e11 } } );
      ("linger", { Config.default with linger = 1e11 });
    ];
  refused "negative linger" "linger time must be a non-negative number"
    (Braid_server.Server.check_config { Config.default with linger = -1. });
  Alcotest.(check bool)
    "a year is fine" true
    (Result.is_ok
       (Braid_server.Server.check_config
          {
            Config.default with
            timeouts = { t with keep_alive = Config.max_seconds };
          }));
  let server =
    match
      Braid_server.Server.create
        ~settings:(Real_services.settings Router.empty)
        Config.default
    with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  match Braid_server.Server.shutdown server ~deadline:1e11 with
  | () -> Alcotest.fail "shutdown: a huge deadline accepted"
  | exception Invalid_argument _ -> ()

(* How a duration's syntax error reads, after the setting's name. *)
let syntax =
  "takes a number of seconds (digits, and at most 3 decimals after a point: \
   30, 2.5)"

(* Issue 39: one strict syntax for every duration, the file's and the
   options': float_of_string took "1e-300", "0x10" and "1_000", and a value
   just over the bound was reported as "3.1536e+07". *)
let durations_strict () =
  let accepted =
    [
      ("30", 30.);
      ("2.5", 2.5);
      ("0.001", 0.001);
      ("007", 7.);
      ("1.250", 1.25);
      ("31535999.999", 31535999.999);
      ("31536000", Config.max_seconds);
    ]
  in
  List.iter
    (fun (text, seconds) ->
      let c = applied (Printf.sprintf "KeepAliveTimeout %s\n" text) in
      Alcotest.(check (float 0.))
        ("file: " ^ text) seconds c.timeouts.keep_alive;
      let c = configured [ "--keep-alive-timeout=" ^ text ] in
      Alcotest.(check (float 0.))
        ("option: " ^ text) seconds c.timeouts.keep_alive)
    accepted;
  let syntax = syntax ^ ", not " in
  let refused =
    [
      ( "31536000.5",
        "must be at most 31536000 seconds (365 days), not 31536000.5" );
      ( "31536000.001",
        "must be at most 31536000 seconds (365 days), not 31536000.001" );
      ( "100000000000000000000000",
        "must be at most 31536000 seconds (365 days), not \
         100000000000000000000000" );
      ("0.0001", "takes at most 3 decimals (the resolution is 1 ms), not 0.0001");
      ("1.0005", "takes at most 3 decimals (the resolution is 1 ms), not 1.0005");
      ("0", "must be positive, not 0");
      ("0.000", "must be positive, not 0.000");
      ("-1", "must not be negative: -1");
      ("1e-300", syntax ^ "\"1e-300\"");
      ("1e3", syntax ^ "\"1e3\"");
      ("0x10", syntax ^ "\"0x10\"");
      ("1_000", syntax ^ "\"1_000\"");
      ("+5", syntax ^ "\"+5\"");
      ("nan", syntax ^ "\"nan\"");
      ("inf", syntax ^ "\"inf\"");
      (".5", syntax ^ "\".5\"");
      ("5.", syntax ^ "\"5.\"");
      ("1.2.3", syntax ^ "\"1.2.3\"");
      ("5s", syntax ^ "\"5s\"");
      ("", syntax ^ "\"\"");
    ]
  in
  List.iter
    (fun (text, message) ->
      error_is
        (Printf.sprintf "KeepAliveTimeout \"%s\"\n" text)
        ("/etc/braid.conf:1: KeepAliveTimeout " ^ message)
        ();
      Alcotest.(check string)
        ("option: " ^ text)
        ("serve: option '--keep-alive-timeout': the value " ^ message)
        (flags_error [ "--keep-alive-timeout=" ^ text ]))
    refused;
  (* --shutdown-timeout: the same syntax, and 0 (close at once) allowed. *)
  let shutdown args =
    let cmd = Cmdliner.Cmd.v (Cmdliner.Cmd.info "serve") Cli.shutdown_timeout in
    match
      Cmdliner.Cmd.eval_value ~argv:(Array.of_list ("serve" :: args)) cmd
    with
    | Ok (`Ok s) -> s
    | _ -> Alcotest.failf "refused: %s" (String.concat " " args)
  in
  Alcotest.(check (float 0.))
    "shutdown 0" 0.
    (shutdown [ "--shutdown-timeout=0" ]);
  Alcotest.(check (float 0.))
    "shutdown 2.5" 2.5
    (shutdown [ "--shutdown-timeout=2.5" ]);
  Alcotest.(check (float 0.)) "shutdown default" 10. (shutdown []);
  Alcotest.(check string)
    "shutdown 1e3"
    ("serve: option '--shutdown-timeout': the value " ^ syntax ^ "\"1e3\"")
    (flags_error [ "--shutdown-timeout=1e3" ]);
  (* The API's own check prints a value over the bound in full. *)
  match
    Server.check_config
      {
        Config.default with
        timeouts = { Config.default.timeouts with keep_alive = 31536000.5 };
      }
  with
  | Ok _ -> Alcotest.fail "check_config: 31536000.5 accepted"
  | Error msg ->
      Alcotest.(check string)
        "check_config"
        "keep-alive timeout must be at most 31536000 seconds (365 days), not \
         31536000.5"
        msg

(* Issue 39: the per-client cap is on by default, at 256 (more than a
   browser holds to one server), for every address but loopback ones (a
   proxy in front, benchmarks, tests); an explicit cap applies to all, and
   "off" lifts it. *)
let per_client_default () =
  let cap what expected per_client ip =
    Alcotest.(check (option int))
      what expected
      (Config.client_cap per_client (address ip 40000))
  in
  let default = Config.default.max_connections_per_client in
  List.iter
    (fun ip -> cap ("default, remote " ^ ip) (Some 256) default ip)
    [ "192.0.2.7"; "10.0.0.1"; "2001:db8::1"; "::ffff:192.0.2.7"; "128.0.0.1" ];
  List.iter
    (fun ip -> cap ("default, loopback " ^ ip) None default ip)
    [ "127.0.0.1"; "127.1.2.3"; "::1"; "::ffff:127.0.0.1" ];
  Alcotest.(check (option int))
    "default, a Unix-domain peer" None
    (Config.client_cap default (Unix.ADDR_UNIX "/run/x"));
  Alcotest.(check bool)
    "a browser's 256 sockets fit" true
    (Option.get (Config.client_cap default (address "192.0.2.7" 1)) >= 256);
  let c = configured [ "--max-connections-per-client"; "3" ] in
  cap "explicit, loopback too" (Some 3) c.max_connections_per_client "127.0.0.1";
  cap "explicit, remote" (Some 3) c.max_connections_per_client "192.0.2.7";
  let c = configured [ "--max-connections-per-client"; "off" ] in
  cap "off by option, remote" None c.max_connections_per_client "192.0.2.7";
  let c = applied "MaxConnectionsPerClient off\n" in
  cap "off, remote" None c.max_connections_per_client "192.0.2.7";
  cap "absent from the file: the default" (Some 256)
    (applied "Domains 2\n").max_connections_per_client "192.0.2.7";
  match
    Server.check_config
      { Config.default with max_connections_per_client = Cap_except_loopback 0 }
  with
  | Ok _ -> Alcotest.fail "a cap of 0 accepted"
  | Error msg ->
      Alcotest.(check string)
        "cap 0" "maximum connections per client must be positive" msg

(* A reload cannot move the server or change its loops: set_config keeps
   those it was created with, and takes the rest. *)
let set_config_keeps_listen_and_domains () =
  let dir = temp_dir () in
  let running =
    {
      Config.default with
      listen = address "127.0.0.1" 0;
      domains = 2;
      io_backend = Some Braid_io.Epoll;
    }
  in
  let server =
    match
      Server.create ~settings:(Real_services.settings Router.empty) running
    with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  let reloaded =
    {
      running with
      listen = address "0.0.0.0" 9003;
      domains = 4;
      io_backend = Some Braid_io.Uring;
      root = Some dir;
    }
  in
  (match Server.set_config server reloaded with
  | Ok () -> ()
  | Error msg -> Alcotest.fail msg);
  let c = Server.config server in
  check_listen "listen" running.listen c;
  Alcotest.(check int) "domains" 2 c.domains;
  Alcotest.(check bool) "io_backend" true (c.io_backend = Some Braid_io.Epoll);
  Alcotest.(check (option string)) "root" (Some dir) c.root

let errors =
  [
    ("unknown directive", "Listen 80\nServerName x\n",
      "/etc/braid.conf:2: unknown directive \"ServerName\"");
    ("missing argument", "\n\nTimeout\n",
      "/etc/braid.conf:3: Timeout needs an argument");
    ("extra argument", "DocumentRoot /srv/my site\n",
      "/etc/braid.conf:1: DocumentRoot takes one argument, got 2");
    ("trailing comment", "Domains 2 # two\n",
      "/etc/braid.conf:1: Domains takes one argument, got 3");
    ("unterminated quote", "# c\nAccessLog \"/var/log\n",
      "/etc/braid.conf:2: unterminated quoted string");
    ("text after a quote", "AccessLog \"a\"b\n",
      "/etc/braid.conf:1: a quoted string must be followed by a blank");
    ("bad number", "MaxConnections 10k\n",
      "/etc/braid.conf:1: MaxConnections takes a whole number, not \"10k\"");
    ("negative number", "MaxBodySize -1\n",
      "/etc/braid.conf:1: MaxBodySize must not be negative: -1");
    ("zero connections", "MaxConnections 0\n",
      "/etc/braid.conf:1: MaxConnections must be at least 1, not 0");
    ("zero domains", "Domains 0\n",
      "/etc/braid.conf:1: Domains must be at least 1, not 0");
    ("unknown backend", "IoBackend kqueue\n",
      "/etc/braid.conf:1: IoBackend: \"kqueue\" is neither epoll nor uring");
    ("negative seconds", "KeepAliveTimeout -5\n",
      "/etc/braid.conf:1: KeepAliveTimeout must not be negative: -5");
    ("zero seconds", "Timeout 0\n", "/etc/braid.conf:1: Timeout must be positive, not 0");
    ("bad seconds", "HandlerTimeout never\n",
      "/etc/braid.conf:1: HandlerTimeout " ^ syntax ^ ", not \"never\"");
    ("nan seconds", "Timeout nan\n",
      "/etc/braid.conf:1: Timeout " ^ syntax ^ ", not \"nan\"");
    ("duplicate", "Timeout 5\n# again\ntimeout 6\n",
      "/etc/braid.conf:3: duplicate Timeout (first at line 1)");
    ("port out of range", "Listen 65536\n",
      "/etc/braid.conf:1: port 65536 is out of range (0 to 65535)");
    ("bad port", "Listen 127.0.0.1:http\n",
      "/etc/braid.conf:1: the port takes a whole number, not \"http\"");
    ("host name", "Listen localhost:80\n",
      "/etc/braid.conf:1: \"localhost\" is not an IP address (no name resolution)");
    ("bare ipv6", "Listen ::1:80\n",
      "/etc/braid.conf:1: Listen: write an IPv6 address in brackets: \"::1:80\"");
    ("bad brackets", "Listen [::1]80\n",
      "/etc/braid.conf:1: Listen: \"[::1]80\" is not [IPV6]:PORT");
    ("empty path", "DocumentRoot \"\"\n", "/etc/braid.conf:1: empty path");
  ]
[@@ocamlformat "disable"]

(* {1 Reloading the braid binary on SIGHUP}

   The binary runs with --config; the test rewrites the file (a rename, so
   the server never reads half a file), sends SIGHUP and waits for the
   outcome line in the error log. Clients: raw sockets for the keep-alive
   connection that must keep its configuration, Python's http.client for
   the constant load. *)

let binary = "../../bin/main.exe"

let write_atomically path text =
  let tmp = path ^ ".tmp" in
  Out_channel.with_open_bin tmp (fun oc -> output_string oc text);
  Sys.rename tmp path

(* Polls every 10 ms; the watchdog bounds the wait. *)
let rec wait_until what cond =
  if not (cond ()) then (
    Unix.sleepf 0.01;
    wait_until what cond)

(* Starts [braid serve args] and returns its pid and port (from the banner). *)
let start_braid dir args =
  let out = dir ^ "/stdout" in
  let out_fd = Unix.openfile out [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let err_fd =
    Unix.openfile (dir ^ "/stderr") [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600
  in
  let null = Unix.openfile "/dev/null" [ O_RDWR ] 0 in
  let pid =
    Unix.create_process binary
      (Array.of_list (binary :: "serve" :: args))
      null out_fd err_fd
  in
  List.iter Unix.close [ out_fd; err_fd; null ];
  wait_until "banner" (fun () ->
      String.contains (read_if_exists out) '\n'
      ||
      match Unix.waitpid [ WNOHANG ] pid with
      | 0, _ -> false
      | _ ->
          Alcotest.failf "braid exited: %s" (read_if_exists (dir ^ "/stderr")));
  let line = List.hd (String.split_on_char '\n' (read_if_exists out)) in
  let port = Scanf.sscanf line "braid: serving http://127.0.0.1:%d" Fun.id in
  (pid, port)

let describe : Unix.process_status -> string = function
  | WEXITED n -> Printf.sprintf "exited with %d" n
  | WSIGNALED n | WSTOPPED n -> Printf.sprintf "killed by signal %d" n

(* Fails at once, saying how, if braid has ended: a wait for its log must
   not outlive it. *)
let check_running pid =
  match Unix.waitpid [ WNOHANG ] pid with
  | 0, _ -> ()
  | _, status -> Alcotest.failf "braid %s" (describe status)

let stop_braid pid =
  match Unix.kill pid Sys.sigterm with
  | exception Unix.Unix_error ((ESRCH | ECHILD), _, _) -> ()
  | () -> (
      match waitpid pid with
      | WEXITED 0 -> ()
      | status -> Alcotest.failf "braid %s" (describe status)
      | exception Unix.Unix_error (ECHILD, _, _) -> ())

(* A blocking client connection, for requests one at a time. *)
let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  s

(* GET [path] on [s] and the body (Content-Length framing, keep-alive). *)
let get s path =
  let req = Printf.sprintf "GET %s HTTP/1.1\r\nHost: t\r\n\r\n" path in
  ignore (Unix.write_substring s req 0 (String.length req));
  let buf = Buffer.create 512 and chunk = Bytes.create 4096 in
  let rec head () =
    match find (Buffer.contents buf) "\r\n\r\n" with
    | Some i -> i
    | None -> (
        match Unix.read s chunk 0 4096 with
        | 0 -> Alcotest.fail "connection closed"
        | n ->
            Buffer.add_subbytes buf chunk 0 n;
            head ())
  in
  let i = head () in
  let h = String.lowercase_ascii (Buffer.sub buf 0 i) in
  if not (String.length h > 12 && String.sub h 9 3 = "200") then
    Alcotest.failf "status: %S" h;
  let length =
    let k = Option.get (find h "content-length:") in
    Scanf.sscanf
      (String.sub h k (String.length h - k))
      "content-length: %d" Fun.id
  in
  let rec body () =
    if Buffer.length buf < i + 4 + length then
      match Unix.read s chunk 0 4096 with
      | 0 -> Alcotest.fail "connection closed in the body"
      | n ->
          Buffer.add_subbytes buf chunk 0 n;
          body ()
  in
  body ();
  Buffer.sub buf (i + 4) length

let get_new port path =
  let s = connect port in
  Fun.protect ~finally:(fun () -> Unix.close s) (fun () -> get s path)

(* Requests on fresh and kept-alive connections until [stop] exists; prints
   "ok N failed M". Creates [stop ^ ".started"] after its first success. *)
let py_load =
  {|
import http.client, os, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
parent, deadline = os.getppid(), time.monotonic() + 100
ok = failed = 0
# Stops when told, and also if the test died or ran away.
while not os.path.exists(stop) and os.getppid() == parent \
        and time.monotonic() < deadline:
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        for _ in range(4):
            c.request("GET", "/x.txt")
            r = c.getresponse()
            body = r.read()
            if r.status == 200 and body in (b"A\n", b"B\n"):
                ok += 1
                if ok == 1:
                    open(stop + ".started", "w").close()
            else:
                failed += 1
                print("bad", r.status, body, file=sys.stderr)
        c.close()
    except Exception as e:
        failed += 1
        print("error", repr(e), file=sys.stderr)
print("ok", ok, "failed", failed)
|}

(* Starts the load and returns the function that stops it and returns its
   counts. [on_failure] stops it too. *)
let start_load dir port ~on_failure =
  let stop_file = dir ^ "/stop-load" and out = dir ^ "/load.out" in
  let out_fd = Unix.openfile out [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let err_fd =
    Unix.openfile (dir ^ "/load.err") [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600
  in
  let pid =
    Unix.create_process "python3"
      [| "python3"; "-c"; py_load; string_of_int port; stop_file |]
      Unix.stdin out_fd err_fd
  in
  List.iter Unix.close [ out_fd; err_fd ];
  let stopped = ref false in
  let stop () =
    if not !stopped then (
      stopped := true;
      Out_channel.with_open_bin stop_file ignore;
      ignore (waitpid pid))
  in
  on_failure stop;
  wait_until "load" (fun () -> Sys.file_exists (stop_file ^ ".started"));
  fun () ->
    stop ();
    let out = read_if_exists out in
    match Scanf.sscanf out "ok %d failed %d" (fun a b -> (a, b)) with
    | r -> r
    | exception _ ->
        Alcotest.failf "load: %S %S" out (read_if_exists (dir ^ "/load.err"))

let site () =
  let dir = temp_dir () in
  Unix.mkdir (dir ^ "/a") 0o755;
  Unix.mkdir (dir ^ "/b") 0o755;
  Out_channel.with_open_bin (dir ^ "/a/x.txt") (fun oc ->
      output_string oc "A\n");
  Out_channel.with_open_bin (dir ^ "/b/x.txt") (fun oc ->
      output_string oc "B\n");
  dir

let conf root =
  Printf.sprintf
    "Listen 127.0.0.1:0\n\
     KeepAliveTimeout 60\n\
     DocumentRoot %s\n\
     ErrorLog error.log\n"
    root

(* Sends SIGHUP and waits for the [n]th outcome line of a reload. *)
let reload pid dir n =
  Unix.kill pid Sys.sighup;
  wait_until "reload" (fun () ->
      check_running pid;
      let log = read_if_exists (dir ^ "/error.log") in
      count log "configuration reloaded" + count log "reload rejected" >= n)

(* 20 reloads switching DocumentRoot under a constant load: no request
   fails; a keep-alive connection opened before them keeps the first root;
   each new connection sees the root of the latest reload. *)
let twenty_reloads () =
  let dir = site () in
  let file = dir ^ "/braid.conf" in
  write_atomically file (conf "a");
  let pid, port = start_braid dir [ "--config"; file ] in
  Fun.protect ~finally:(fun () -> stop_braid pid) @@ fun () ->
  let old = connect port in
  Alcotest.(check string) "before" "A\n" (get old "/x.txt");
  let cleanup = ref ignore in
  Fun.protect ~finally:(fun () -> !cleanup ()) @@ fun () ->
  let stop_load =
    start_load dir port ~on_failure:(fun stop -> cleanup := stop)
  in
  for i = 1 to 20 do
    let root = if i mod 2 = 1 then "b" else "a" in
    write_atomically file (conf root);
    reload pid dir i;
    Alcotest.(check string)
      (Printf.sprintf "new connection after reload %d" i)
      (String.uppercase_ascii root ^ "\n")
      (get_new port "/x.txt");
    Alcotest.(check string)
      (Printf.sprintf "old connection after reload %d" i)
      "A\n" (get old "/x.txt")
  done;
  Unix.close old;
  let ok, failed = stop_load () in
  Alcotest.(check int) "failed requests" 0 failed;
  if ok = 0 then Alcotest.fail "no request under load";
  Alcotest.(check int)
    "reloads logged" 20
    (count (read_if_exists (dir ^ "/error.log")) "info: configuration reloaded")

(* A bad file on SIGHUP: rejected, logged with file:line, and the old
   configuration still serves; Listen changes are reported, the rest
   applies. *)
let bad_reload () =
  let dir = site () in
  let file = dir ^ "/braid.conf" in
  write_atomically file (conf "a");
  let pid, port = start_braid dir [ "--config"; file ] in
  Fun.protect ~finally:(fun () -> stop_braid pid) @@ fun () ->
  write_atomically file (conf "b" ^ "MaxConnections 0\n");
  reload pid dir 1;
  let log = read_if_exists (dir ^ "/error.log") in
  let expected =
    "error: reload rejected, the configuration in force stays: " ^ file
    ^ ":5: MaxConnections must be at least 1, not 0"
  in
  if count log expected <> 1 then
    Alcotest.failf "expected %S in the error log: %S" expected log;
  Alcotest.(check string) "old root" "A\n" (get_new port "/x.txt");
  write_atomically file (conf "missing");
  reload pid dir 2;
  let expected =
    Printf.sprintf "%s:3: root %s/missing: No such file" file dir
  in
  if count (read_if_exists (dir ^ "/error.log")) expected <> 1 then
    Alcotest.failf "expected %S in the error log" expected;
  Alcotest.(check string) "still the old root" "A\n" (get_new port "/x.txt");
  (* A timeout that would wrap around in nanoseconds (it used to reload). *)
  write_atomically file (conf "b" ^ "Timeout 99999999999\n");
  reload pid dir 3;
  let expected =
    Printf.sprintf
      "%s:5: Timeout must be at most 31536000 seconds (365 days), not \
       99999999999"
      file
  in
  if count (read_if_exists (dir ^ "/error.log")) expected <> 1 then
    Alcotest.failf "expected %S in the error log" expected;
  Alcotest.(check string) "the old one stays" "A\n" (get_new port "/x.txt");
  write_atomically file
    (Printf.sprintf "Listen 127.0.0.1:%d\nDocumentRoot b\nErrorLog error.log\n"
       (if port = 65535 then 65534 else port + 1));
  reload pid dir 4;
  let log = read_if_exists (dir ^ "/error.log") in
  if count log "needs a restart" <> 1 then
    Alcotest.failf "no restart warning: %S" log;
  Alcotest.(check string) "the rest applies" "B\n" (get_new port "/x.txt")

(* The access log deleted, then renamed away, while a load runs: no request
   fails, and each time a new file appears at the path and fills up. *)
let log_rotation () =
  let dir = site () in
  let access = dir ^ "/access.log" in
  let pid, port =
    start_braid dir
      [ "--port"; "0"; "--root"; dir ^ "/a"; "--access-log"; access ]
  in
  Fun.protect ~finally:(fun () -> stop_braid pid) @@ fun () ->
  let cleanup = ref ignore in
  Fun.protect ~finally:(fun () -> !cleanup ()) @@ fun () ->
  let stop_load =
    start_load dir port ~on_failure:(fun stop -> cleanup := stop)
  in
  let lines path =
    check_running pid;
    count (read_if_exists path) "\n"
  in
  wait_until "log" (fun () -> lines access > 0);
  Sys.remove access;
  wait_until "a new log" (fun () -> Sys.file_exists access && lines access > 10);
  Sys.rename access (access ^ ".1");
  wait_until "a rotated log" (fun () ->
      Sys.file_exists access && lines access > 10);
  let ok, failed = stop_load () in
  Alcotest.(check int) "failed requests" 0 failed;
  if ok = 0 then Alcotest.fail "no request under load";
  if
    count (read_if_exists (dir ^ "/stderr")) "was moved or deleted; reopened"
    <> 2
  then Alcotest.failf "stderr: %S" (read_if_exists (dir ^ "/stderr"))

let () =
  Test_support.Watchdog.start ~seconds:120. "test_config";
  Alcotest.run "config file"
    [
      ( "parse",
        [
          Alcotest.test_case "the table, every directive sampled" `Quick
            table_covered;
          Alcotest.test_case "each directive, in any case" `Quick each_directive;
          Alcotest.test_case "each directive, duplicated" `Quick each_duplicate;
          Alcotest.test_case "every directive" `Quick all_directives;
          Alcotest.test_case "Listen forms" `Quick listen_forms;
          Alcotest.test_case "off and stderr, in any case" `Quick keywords;
          Alcotest.test_case "RequestHeaderTimeout wins over Timeout" `Quick
            request_header_wins;
          Alcotest.test_case "absent directives" `Quick absent_directives;
        ] );
      ( "precedence",
        [
          Alcotest.test_case "defaults alone" `Quick defaults_alone;
          Alcotest.test_case "file beats defaults" `Quick file_beats_defaults;
          Alcotest.test_case "flags beat file" `Quick flags_beat_file;
          Alcotest.test_case "flags beat defaults" `Quick flags_beat_defaults;
          Alcotest.test_case "errors blamed on a line or an option" `Quick
            errors_blamed;
          Alcotest.test_case "durations bounded" `Quick durations_bounded;
          Alcotest.test_case "durations strict" `Quick durations_strict;
          Alcotest.test_case "per-client cap on by default" `Quick
            per_client_default;
          Alcotest.test_case "set_config keeps listen and domains" `Quick
            set_config_keeps_listen_and_domains;
        ] );
      ( "errors",
        List.map
          (fun (name, text, expected) ->
            Alcotest.test_case name `Quick (error_is text expected))
          errors );
      ( "braid binary: SIGHUP reloads, log rotation",
        [
          Alcotest.test_case "20 reloads under load" `Quick twenty_reloads;
          Alcotest.test_case "bad file rejected, Listen needs a restart" `Quick
            bad_reload;
          Alcotest.test_case "access log deleted and rotated under load" `Quick
            log_rotation;
        ] );
    ]
