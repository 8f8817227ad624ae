(* The reverse proxy as `braid serve` runs it (ProxyPass in a --config
   file), in front of Braid upstreams: a WebSocket relayed both ways, and
   SIGHUP reloads that swap the upstreams under wrk's load. *)

open Braid_web

let binary = "../../bin/main.exe"

let free_port () =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.bind s (ADDR_INET (Unix.inet_addr_loopback, 0));
  let port =
    match Unix.getsockname s with ADDR_INET (_, p) -> p | _ -> assert false
  in
  Unix.close s;
  port

let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  s

let rec wait_listening port n =
  match connect port with
  | s -> Unix.close s
  | exception Unix.Unix_error _ ->
      if n = 0 then Alcotest.fail "braid serve did not start";
      Unix.sleepf 0.02;
      wait_listening port (n - 1)

(* `braid serve` with [config] as its --config file, for [f ~port ~pid]. *)
let serving config f =
  let dir = Peers.temp_dir "braid-serve-proxy" in
  let file = Filename.concat dir "braid.conf" in
  Peers.write_file file config;
  let port = free_port () in
  let log = Unix.openfile "serve.log" [ O_WRONLY; O_CREAT; O_APPEND ] 0o600 in
  let argv =
    [| binary; "serve"; "-p"; string_of_int port; "--config"; file |]
  in
  let pid = Unix.create_process binary argv Unix.stdin log log in
  Unix.close log;
  Fun.protect
    ~finally:(fun () ->
      (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
      try ignore (Unix.waitpid [] pid)
      with Unix.Unix_error (ECHILD, _, _) -> ())
    (fun () ->
      wait_listening port 250;
      f ~port ~pid ~file)

let upstream name =
  Router.empty
  |> Router.get "/api/who" (fun _ -> Response.string name)
  |> Router.get "/ws/echo" (fun r ->
         Websocket.accept ~origins:Any r (fun ws ->
             let rec loop () =
               match Websocket.receive ws with
               | `Text s ->
                   Websocket.send_text ws (name ^ ": " ^ s);
                   loop ()
               | `Binary s ->
                   Websocket.send_binary ws s;
                   loop ()
               | `Close _ -> ()
             in
             loop ()))

(* {1 A WebSocket client on a socket} *)

let write_all fd s =
  let b = Bytes.of_string s in
  let rec go off =
    if off < Bytes.length b then
      go (off + Unix.write fd b off (Bytes.length b - off))
  in
  go 0

let read_exactly fd n =
  let b = Bytes.create n in
  let rec go off =
    if off < n then
      match Unix.read fd b off (n - off) with
      | 0 -> Alcotest.failf "connection closed after %d of %d bytes" off n
      | k -> go (off + k)
  in
  go 0;
  Bytes.to_string b

(* The response head, read a byte at a time: nothing past it is taken. *)
let read_head fd =
  let b = Buffer.create 256 in
  let rec go () =
    let c = read_exactly fd 1 in
    Buffer.add_string b c;
    let n = Buffer.length b in
    if n >= 4 && Buffer.sub b (n - 4) 4 = "\r\n\r\n" then Buffer.contents b
    else go ()
  in
  go ()

(* A masked client frame (RFC 6455 §5.2). *)
let frame ~opcode payload =
  let b = Buffer.create (String.length payload + 14) in
  Buffer.add_char b (Char.chr (0x80 lor opcode));
  let n = String.length payload in
  if n < 126 then Buffer.add_char b (Char.chr (0x80 lor n))
  else if n < 65536 then (
    Buffer.add_char b (Char.chr (0x80 lor 126));
    Buffer.add_uint16_be b n)
  else (
    Buffer.add_char b (Char.chr (0x80 lor 127));
    Buffer.add_int64_be b (Int64.of_int n));
  let mask = "\x12\x34\x56\x78" in
  Buffer.add_string b mask;
  String.iteri
    (fun i c ->
      Buffer.add_char b (Char.chr (Char.code c lxor Char.code mask.[i land 3])))
    payload;
  Buffer.contents b

(* A server frame: unmasked. *)
let read_frame fd =
  let h = read_exactly fd 2 in
  let opcode = Char.code h.[0] land 0x0f in
  let n =
    match Char.code h.[1] land 0x7f with
    | 126 -> String.get_uint16_be (read_exactly fd 2) 0
    | 127 -> Int64.to_int (String.get_int64_be (read_exactly fd 8) 0)
    | n -> n
  in
  (opcode, read_exactly fd n)

let contains text sub =
  let n = String.length sub in
  let rec go i =
    i + n <= String.length text && (String.sub text i n = sub || go (i + 1))
  in
  go 0

let websocket () =
  Peers.braid (upstream "up") @@ fun ~port:up ~tls_port:_ ->
  serving (Printf.sprintf "ProxyPass /ws http://127.0.0.1:%d\n" up)
  @@ fun ~port ~pid:_ ~file:_ ->
  let fd = connect port in
  Fun.protect ~finally:(fun () -> Unix.close fd) @@ fun () ->
  write_all fd
    (Printf.sprintf
       "GET /ws/echo HTTP/1.1\r\n\
        Host: 127.0.0.1:%d\r\n\
        Upgrade: websocket\r\n\
        Connection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\n\
        \r\n"
       port);
  let head = String.lowercase_ascii (read_head fd) in
  if not (String.starts_with ~prefix:"http/1.1 101" head) then
    Alcotest.failf "not switched:\n%s" head;
  List.iter
    (fun field ->
      if not (contains head field) then
        Alcotest.failf "%S not in:\n%s" field head)
    [
      "upgrade: websocket";
      "connection: upgrade";
      (* RFC 6455's example: the upstream's answer to the client's key. *)
      "sec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=";
    ];
  write_all fd (frame ~opcode:1 "hello");
  Alcotest.(check (pair int string)) "echoed" (1, "up: hello") (read_frame fd);
  (* Larger than one read of the relay, both ways. *)
  let big = String.init 300_000 (fun i -> Char.chr (i land 0xff)) in
  write_all fd (frame ~opcode:2 big);
  let opcode, back = read_frame fd in
  Alcotest.(check int) "binary" 2 opcode;
  Alcotest.(check bool) "300 kB echoed whole" true (back = big);
  write_all fd (frame ~opcode:8 "\x03\xe8");
  let opcode, _ = read_frame fd in
  Alcotest.(check int) "closed" 8 opcode

(* SIGHUP swaps the upstreams (a, b, both, with and without health checks)
   while wrk keeps 10 connections busy: no request fails. Then SIGTERM
   ends the server, its health-checking loop with it. *)
let reload_under_load () =
  Peers.braid (upstream "a") @@ fun ~port:a ~tls_port:_ ->
  Peers.braid (upstream "b") @@ fun ~port:b ~tls_port:_ ->
  let line upstreams options =
    Printf.sprintf "ProxyPass /api %s %s\n"
      (String.concat " "
         (List.map (Printf.sprintf "http://127.0.0.1:%d") upstreams))
      options
  in
  let checked = "health_check=/api/who health_interval=0.2" in
  serving (line [ a ] checked) @@ fun ~port ~pid ~file ->
  let wrk =
    Unix.open_process_args_in "wrk"
      [|
        "wrk";
        "-t1";
        "-c10";
        "-d3s";
        Printf.sprintf "http://127.0.0.1:%d/api/who" port;
      |]
  in
  let configs =
    [
      line [ b ] "";
      line [ a; b ] checked;
      line [ a ] "retries=0";
      line [ b; a ] checked;
    ]
  in
  let reloads = ref 0 in
  for i = 0 to 5 do
    Unix.sleepf 0.4;
    Peers.write_file file (List.nth configs (i mod List.length configs));
    Unix.kill pid Sys.sighup;
    incr reloads
  done;
  let report = In_channel.input_all wrk in
  ignore (Unix.close_process_in wrk);
  let requests =
    match
      Str.search_forward (Str.regexp "\\([0-9]+\\) requests in") report 0
    with
    | _ -> int_of_string (Str.matched_group 1 report)
    | exception Not_found -> Alcotest.failf "no wrk report:\n%s" report
  in
  if requests < 100 then Alcotest.failf "only %d requests:\n%s" requests report;
  if contains report "Non-2xx" || contains report "Socket errors" then
    Alcotest.failf "errors across %d reloads:\n%s" !reloads report;
  Printf.printf "%d requests across %d reloads, 0 errors\n%!" requests !reloads;
  (* A graceful stop, health checks running: within the shutdown's time. *)
  Unix.kill pid Sys.sigterm;
  let rec exited n =
    match Unix.waitpid [ WNOHANG ] pid with
    | 0, _ ->
        if n = 0 then Alcotest.fail "braid serve did not stop on SIGTERM";
        Unix.sleepf 0.05;
        exited (n - 1)
    | _, WEXITED 0 -> ()
    | _, _ -> Alcotest.fail "braid serve did not exit cleanly"
  in
  exited 200

(* One GET on a connection of its own: the body. *)
let get_body port path =
  let fd = connect port in
  Fun.protect
    ~finally:(fun () -> Unix.close fd)
    (fun () ->
      write_all fd
        (Printf.sprintf
           "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
           path);
      let out = Buffer.create 256 and buf = Bytes.create 4096 in
      let rec go () =
        match Unix.read fd buf 0 4096 with
        | 0 -> ()
        | n ->
            Buffer.add_subbytes out buf 0 n;
            go ()
      in
      go ();
      let text = Buffer.contents out in
      match Str.search_forward (Str.regexp_string "\r\n\r\n") text 0 with
      | i -> String.sub text (i + 4) (String.length text - i - 4)
      | exception Not_found -> Alcotest.failf "no response head: %S" text)

let threads pid =
  Array.length (Sys.readdir (Printf.sprintf "/proc/%d/task" pid))

(* Active health checks in `braid serve` run on the server's own loop: added
   by a reload (they used to start only with the process, on a domain of
   their own), they eject an upstream whose check fails though it answers
   requests (passive health alone would keep it), and take it back when
   the check passes again; the server has no more threads for them. *)
let health_checks () =
  let healthy = Atomic.make true in
  let checked =
    upstream "b"
    |> Router.get "/health" (fun _ ->
           if Atomic.get healthy then Response.string "ok"
           else Response.error 503 "")
  in
  let always_ok =
    upstream "a" |> Router.get "/health" (fun _ -> Response.string "ok")
  in
  Peers.braid always_ok @@ fun ~port:a ~tls_port:_ ->
  Peers.braid checked @@ fun ~port:b ~tls_port:_ ->
  let line options =
    Printf.sprintf "ProxyPass /api http://127.0.0.1:%d http://127.0.0.1:%d %s\n"
      a b options
  in
  serving (line "") @@ fun ~port ~pid ~file ->
  let answers () =
    List.sort_uniq compare (List.init 6 (fun _ -> get_body port "/api/who"))
  in
  Alcotest.(check (list string)) "both at first" [ "a"; "b" ] (answers ());
  let before = threads pid in
  (* Until the checks have had their effect (a proxy kept by a reload
     looks for checks once a second), or 5 s. *)
  let eventually what expected =
    let rec go n =
      let got = answers () in
      if got = expected || n = 0 then
        Alcotest.(check (list string)) what expected got
      else (
        Unix.sleepf 0.1;
        go (n - 1))
    in
    go 50
  in
  Atomic.set healthy false;
  Peers.write_file file (line "health_check=/health health_interval=0.1");
  Unix.kill pid Sys.sighup;
  eventually "b ejected by its check" [ "a" ];
  (* Still out while its check fails. *)
  Unix.sleepf 0.3;
  Alcotest.(check (list string)) "b kept out" [ "a" ] (answers ());
  Atomic.set healthy true;
  eventually "b back" [ "a"; "b" ];
  Alcotest.(check int) "no thread for the checks" before (threads pid)

let () =
  Alcotest.run "serve-proxy"
    [
      ( "ProxyPass",
        [
          Alcotest.test_case "websocket" `Quick websocket;
          Alcotest.test_case "reload under load" `Quick reload_under_load;
          Alcotest.test_case "health checks on the loop" `Quick health_checks;
        ] );
    ]
