(* The configuration file: every directive, every kind of error with its
   exact "file:line: message", and how the file meets the base
   configuration and the checks of Server.check_config. *)

open Braid_server

let parse text = Config_file.parse ~file:"/etc/braid.conf" text

let error_is text expected () =
  match parse text with
  | Ok _ -> Alcotest.failf "accepted %S" text
  | Error msg -> Alcotest.(check string) "message" expected msg

let ok text =
  match parse text with
  | Ok f -> f
  | Error msg -> Alcotest.failf "rejected: %s" msg

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
  Alcotest.(check (option (pair (option string) int)))
    "listen"
    (Some (Some "127.0.0.1", 8081))
    (Option.map (fun (l : Config_file.listen) -> (l.host, l.port)) f.listen);
  Alcotest.(check (option int)) "domains" (Some 2) f.domains;
  Alcotest.(check (option string)) "root" (Some "/srv/my site") f.document_root;
  Alcotest.(check (option (option string)))
    "relative access log" (Some (Some "/etc/logs/access.log")) f.access_log;
  Alcotest.(check (option (option string)))
    "escaped quotes" (Some (Some "/var/log/braid \"error\".log")) f.error_log;
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
    f.lines;
  let c = Config_file.apply f Config.default in
  Alcotest.(check (option string)) "config root" (Some "/srv/my site") c.root;
  Alcotest.(check int) "max connections" 50 c.max_connections;
  Alcotest.(check int) "max body" 0 c.limits.max_body;
  Alcotest.(check (float 0.)) "request header" 2.5 c.timeouts.request_header;
  Alcotest.(check (float 0.)) "body = Timeout" 30. c.timeouts.body;
  Alcotest.(check (float 0.)) "keep-alive" 3. c.timeouts.keep_alive;
  Alcotest.(check (option (float 0.))) "handler" None c.timeouts.handler

let listen_forms () =
  let listen s =
    match (ok ("Listen " ^ s)).listen with
    | Some l -> (l.host, l.port)
    | None -> Alcotest.fail "no listen"
  in
  let pair = Alcotest.(pair (option string) int) in
  Alcotest.check pair "port" (None, 80) (listen "80");
  Alcotest.check pair "ipv6" (Some "::1", 8080) (listen "[::1]:8080");
  Alcotest.check pair "quoted" (Some "0.0.0.0", 0) (listen "\"0.0.0.0:0\"")

(* What the file leaves out keeps the base's value; Timeout sets both I/O
   timeouts unless RequestHeaderTimeout says otherwise. *)
let absent_directives () =
  let base =
    {
      Config.default with
      timeouts = { Config.default.timeouts with handler = Some 9. };
    }
  in
  let c = Config_file.apply (ok "Timeout 7\n") base in
  Alcotest.(check (float 0.)) "request header" 7. c.timeouts.request_header;
  Alcotest.(check (float 0.)) "body" 7. c.timeouts.body;
  Alcotest.(check (float 0.))
    "keep-alive" Config.default.timeouts.keep_alive c.timeouts.keep_alive;
  Alcotest.(check (option (float 0.))) "handler" (Some 9.) c.timeouts.handler;
  Alcotest.(check int)
    "max connections" Config.default.max_connections c.max_connections

let temp_dir () = Unix.realpath (Filename.temp_dir "braid-conf" "")

(* check_config's errors are blamed on the directive that causes them. *)
let checked () =
  let dir = temp_dir () in
  let file = dir ^ "/braid.conf" in
  let write text =
    Out_channel.with_open_bin file (fun oc -> output_string oc text)
  in
  Unix.mkdir (dir ^ "/www") 0o755;
  write "Timeout 5\nDocumentRoot www\n";
  (match
     Result.bind (Config_file.load file) (fun f ->
         Config_file.to_config f Config.default)
   with
  | Ok c -> Alcotest.(check (option string)) "root" (Some (dir ^ "/www")) c.root
  | Error msg -> Alcotest.fail msg);
  write "Timeout 5\nDocumentRoot missing\n";
  (match
     Result.bind (Config_file.load file) (fun f ->
         Config_file.to_config f Config.default)
   with
  | Ok _ -> Alcotest.fail "accepted a missing root"
  | Error msg ->
      Alcotest.(check string)
        "message"
        (Printf.sprintf "%s:2: root %s/missing: No such file or directory" file
           dir)
        msg);
  (* The override wins over the file: here it repairs the root. *)
  (match
     Result.bind (Config_file.load file) (fun f ->
         Config_file.to_config
           ~override:(fun c -> { c with root = Some (dir ^ "/www") })
           f Config.default)
   with
  | Ok c -> Alcotest.(check (option string)) "root" (Some (dir ^ "/www")) c.root
  | Error msg -> Alcotest.fail msg);
  match Config_file.load (dir ^ "/nope.conf") with
  | Ok _ -> Alcotest.fail "loaded a missing file"
  | Error msg ->
      Alcotest.(check string)
        "missing file"
        (dir ^ "/nope.conf: No such file or directory")
        msg

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
    ("negative seconds", "KeepAliveTimeout -5\n",
      "/etc/braid.conf:1: KeepAliveTimeout must not be negative: -5");
    ("zero seconds", "Timeout 0\n", "/etc/braid.conf:1: Timeout must be positive");
    ("bad seconds", "HandlerTimeout never\n",
      "/etc/braid.conf:1: HandlerTimeout takes a number of seconds, not \"never\"");
    ("nan seconds", "Timeout nan\n",
      "/etc/braid.conf:1: Timeout takes a number of seconds, not \"nan\"");
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

let () =
  Alcotest.run "config file"
    [
      ( "parse",
        [
          Alcotest.test_case "every directive" `Quick all_directives;
          Alcotest.test_case "Listen forms" `Quick listen_forms;
          Alcotest.test_case "absent directives" `Quick absent_directives;
          Alcotest.test_case "checked, errors blamed on lines" `Quick checked;
        ] );
      ( "errors",
        List.map
          (fun (name, text, expected) ->
            Alcotest.test_case name `Quick (error_is text expected))
          errors );
    ]
