(* The client against real peers: a Braid server (plain and TLS), Python's
   http.server (plain and TLS with a test CA), nginx, and raw TCP servers
   that misbehave on purpose. *)

open Braid_web
module C = Braid_client
module Net = Braid_io.Net

let fail_error e = Alcotest.failf "unexpected error: %s" (C.Error.to_string e)
let get_ok c url = match C.get c url with Ok w -> w | Error e -> fail_error e

let expect_error what pred = function
  | Ok _ -> Alcotest.failf "%s: expected an error" what
  | Error e ->
      if not (pred e) then
        Alcotest.failf "%s: wrong error: %s" what (C.Error.to_string e)

let peer_port (r : Handler.request) =
  match r.peer with Some (ADDR_INET (_, p)) -> string_of_int p | _ -> "?"

let big_body = String.init 300_000 (fun i -> Char.chr (i mod 253))

let router =
  Router.empty
  |> Router.get "/hello" (fun _ -> Response.string "hello")
  |> Router.get "/peer" (fun r -> Response.string (peer_port r))
  |> Router.get "/close" (fun r ->
         Response.string ~headers:[ ("Connection", "close") ] (peer_port r))
  |> Router.post "/echo" (fun r ->
         match Handler.body_string r with
         | Ok s -> Response.string s
         | Error e -> Handler.bad_request e)
  |> Router.get "/stream" (fun _ ->
         Response.stream (fun w ->
             for i = 0 to 99 do
               Response.Writer.write w
                 (String.make 1000 (Char.chr (65 + (i mod 26))))
             done))
  |> Router.get "/echo-upgrade" (fun _ ->
         (* A protocol of its own: bytes back as they come. *)
         Response.upgrade ~protocol:"echo" (fun up ->
             let buf = Bytes.create 4096 in
             let rec loop () =
               match Upgraded.read up buf 0 4096 with
               | 0 -> ()
               | n ->
                   Upgraded.write_bytes up buf 0 n;
                   loop ()
             in
             loop ()))
  |> Router.get "/big" (fun _ -> Response.string big_body)
  |> Router.get "/redirect" (fun _ -> Response.redirect ~status:302 "/hello")
  |> Router.get "/loop" (fun _ -> Response.redirect ~status:302 "/loop")
  |> Router.post "/see-other" (fun _ -> Response.redirect ~status:303 "hello")
  |> Router.get "/slow-head" (fun _ ->
         Services.sleep 5.;
         Response.string "late")
  |> Router.get "/stall-body" (fun _ ->
         Response.stream (fun w ->
             Response.Writer.write w "a";
             Response.Writer.flush w;
             Services.sleep 5.))

let with_client ?(config = C.default_config) f =
  Braid_io.run @@ fun () ->
  Braid.Switch.run @@ fun sw -> f (C.create ~sw ~config ())

let basics () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
  with_client @@ fun c ->
  let w = get_ok c (url "/hello") in
  Alcotest.(check int) "status" 200 w.status;
  Alcotest.(check string) "body" "hello" w.body;
  (* Keep-alive: the same connection serves the next request. *)
  let a = (get_ok c (url "/peer")).body in
  let b = (get_ok c (url "/peer")).body in
  Alcotest.(check string) "connection reused" a b;
  (* The server closes after this one: the next needs a new connection. *)
  let closing = (get_ok c (url "/close")).body in
  Alcotest.(check string) "same connection before close" a closing;
  let after = (get_ok c (url "/peer")).body in
  if after = closing then Alcotest.fail "a closed connection was reused";
  Alcotest.(check int) "404" 404 (get_ok c (url "/missing")).status

let bodies () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
  with_client @@ fun c ->
  let big = String.init 300_000 (fun i -> Char.chr (i mod 251)) in
  let produce write =
    let b = Bytes.of_string big in
    let rec go off =
      if off < Bytes.length b then (
        let n = min 7000 (Bytes.length b - off) in
        write b off n;
        go (off + n))
    in
    go 0
  in
  let echo body =
    match
      C.request c ~body POST (url "/echo") (fun r -> C.Response.to_string r)
    with
    | Ok (Ok s) -> s
    | Ok (Error e) | Error e -> fail_error e
  in
  Alcotest.(check string) "string body" "abc" (echo (C.Body.string "abc"));
  Alcotest.(check bool)
    "chunked upload" true
    (echo (C.Body.stream produce) = big);
  Alcotest.(check bool)
    "streamed with a length" true
    (echo (C.Body.stream ~length:(String.length big) produce) = big);
  (match
     C.request c
       ~body:
         (C.Body.stream ~length:10 (fun w -> w (Bytes.of_string "short") 0 5))
       POST (url "/echo") ignore
   with
  | Error (C.Error.Connection_lost _) -> ()
  | Ok _ -> Alcotest.fail "a stream shorter than its length was sent"
  | Error e -> fail_error e);
  (* A streamed response, read in small pieces. *)
  match
    C.request c GET (url "/stream") (fun r ->
        let buf = Bytes.create 333 and total = ref 0 in
        let rec go () =
          match C.Response.read r buf 0 333 with
          | Ok 0 -> !total
          | Ok n ->
              total := !total + n;
              go ()
          | Error e -> fail_error e
        in
        go ())
  with
  | Ok n -> Alcotest.(check int) "streamed bytes" 100_000 n
  | Error e -> fail_error e

let redirects () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
  ( with_client @@ fun c ->
    Alcotest.(check string) "followed" "hello" (get_ok c (url "/redirect")).body;
    expect_error "loop"
      (function C.Error.Too_many_redirects 5 -> true | _ -> false)
      (C.get c (url "/loop"));
    match
      C.request c ~body:(C.Body.string "x") POST (url "/see-other")
        C.Response.to_string
    with
    | Ok (Ok s) -> Alcotest.(check string) "303 becomes a GET" "hello" s
    | Ok (Error e) | Error e -> fail_error e );
  with_client ~config:{ C.default_config with redirects = Never } @@ fun c ->
  Alcotest.(check int) "not followed" 302 (get_ok c (url "/redirect")).status

let timeouts () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
  let config =
    {
      C.default_config with
      first_byte_timeout = Some 0.3;
      read_timeout = Some 0.3;
    }
  in
  ( with_client ~config @@ fun c ->
    expect_error "first byte"
      (( = ) (C.Error.Timeout First_byte))
      (C.get c (url "/slow-head"));
    expect_error "read"
      (( = ) (C.Error.Timeout Read))
      (C.get c (url "/stall-body")) );
  with_client ~config:{ C.default_config with request_timeout = Some 0.3 }
  @@ fun c ->
  expect_error "whole request"
    (( = ) (C.Error.Timeout Whole_request))
    (C.get c (url "/stall-body"));
  (* Nothing listens: refused, before anything was sent. *)
  let closed = Peers.free_port () in
  expect_error "refused"
    (fun e ->
      C.Error.nothing_sent e
      && match e with Connect_failed _ -> true | _ -> false)
    (C.get c (Printf.sprintf "http://127.0.0.1:%d/" closed));
  expect_error "unknown host"
    (function Unknown_host _ -> true | _ -> false)
    (C.get c "http://no-such-host.invalid/")

(* A cancelled request gives its slot back and leaves no descriptor. *)
let cancellation () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
  with_client ~config:{ C.default_config with max_connections = 1 } @@ fun c ->
  ignore (get_ok c (url "/hello"));
  let fds = (Braid_io.stats ()).open_fds in
  (match Braid_io.Time.timeout 0.2 (fun () -> C.get c (url "/slow-head")) with
  | None -> ()
  | Some _ -> Alcotest.fail "the slow request was not cut");
  Alcotest.(check int)
    "the cancelled connection is closed" (fds - 1) (Braid_io.stats ()).open_fds;
  match Braid_io.Time.timeout 5. (fun () -> get_ok c (url "/hello")) with
  | Some w -> Alcotest.(check string) "the slot came back" "hello" w.body
  | None -> Alcotest.fail "the only slot was lost with the cancelled request"

(* A raw server: answers each connection with [script accepted_count]. *)
let raw_server script f =
  Braid.Switch.run @@ fun sw ->
  let listener = Net.listen ~sw (Net.tcp "127.0.0.1" 0) in
  let port =
    match Net.local_addr listener with
    | ADDR_INET (_, p) -> p
    | _ -> assert false
  in
  let count = ref 0 in
  let server =
    Braid.Switch.fork sw (fun () ->
        while true do
          Net.accept_fork ~sw listener ~on_error:ignore (fun s _ ->
              incr count;
              script !count s)
        done)
  in
  Fun.protect ~finally:(fun () -> Braid.Fiber.cancel server) (fun () -> f port)

let read_request s =
  let buf = Bytes.create 4096 in
  ignore (Net.read_into s buf 0 4096)

(* A 101 hands its connection over (out of the pool); one not asked for is
   an error, not a connection returned to the pool. *)
let switching () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  with_client @@ fun c ->
  let url = Printf.sprintf "http://127.0.0.1:%d/echo-upgrade" port in
  (match C.send c ~upgrade:"echo" GET url with
  | Ok r ->
      Alcotest.(check int) "switched" 101 (C.Response.status r);
      let s = C.Response.switch r in
      C.Switched.write s "ping";
      let buf = Bytes.create 16 in
      let n = C.Switched.read s buf 0 16 in
      Alcotest.(check string) "echoed" "ping" (Bytes.sub_string buf 0 n);
      C.Switched.close s
  | Error e -> fail_error e);
  expect_error "an upgrade that is no field value"
    (function Bad_request _ -> true | _ -> false)
    (C.send c ~upgrade:"a\r\nX: y" GET url);
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s
        "HTTP/1.1 101 Switching Protocols\r\n\
         Upgrade: x\r\n\
         Connection: upgrade\r\n\
         \r\n")
    (fun port ->
      expect_error "a 101 not asked for"
        (function Bad_response _ -> true | _ -> false)
        (C.get c (Printf.sprintf "http://127.0.0.1:%d/" port)))

let misbehaving () =
  with_client @@ fun c ->
  (* Smuggling-shaped responses are refused. *)
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s
        "HTTP/1.1 200 OK\r\n\
         Content-Length: 3\r\n\
         Transfer-Encoding: chunked\r\n\
         \r\n\
         0\r\n\
         \r\n")
    (fun port ->
      expect_error "CL+TE"
        (function Bad_response _ -> true | _ -> false)
        (C.get c (Printf.sprintf "http://127.0.0.1:%d/" port)));
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s
        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
    (fun port ->
      expect_error "two lengths"
        (function Bad_response _ -> true | _ -> false)
        (C.get c (Printf.sprintf "http://127.0.0.1:%d/" port)));
  (* A keep-alive connection the server closes after one answer: the next
     request finds it dead and is sent again on a new connection. *)
  raw_server
    (fun n s ->
      read_request s;
      Net.write_string s
        (Printf.sprintf "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n%d" n);
      Braid_io.Time.sleep 0.05)
    (fun port ->
      let url = Printf.sprintf "http://127.0.0.1:%d/" port in
      Alcotest.(check string) "first" "1" (get_ok c url).body;
      Braid_io.Time.sleep 0.1;
      Alcotest.(check string)
        "second, on a new connection" "2" (get_ok c url).body);
  (* Cut mid-body. *)
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
    (fun port ->
      expect_error "cut short"
        (function Bad_response _ -> true | _ -> false)
        (C.get c (Printf.sprintf "http://127.0.0.1:%d/" port)))

(* Response.pipe: whole bodies of known length and chunked ones, the
   connection kept alive after them; bytes that arrived are passed on
   without waiting for the rest; a body cut short is an error. *)
let pipe () =
  let piped r =
    let out = Buffer.create 1024 in
    match
      C.Response.pipe r (fun b off len -> Buffer.add_subbytes out b off len)
    with
    | Ok () -> Buffer.contents out
    | Error e -> fail_error e
  in
  ( Peers.braid router @@ fun ~port ~tls_port:_ ->
    let url path = Printf.sprintf "http://127.0.0.1:%d%s" port path in
    with_client @@ fun c ->
    let get path f =
      match C.request c GET (url path) f with
      | Ok v -> v
      | Error e -> fail_error e
    in
    let before = (get_ok c (url "/peer")).body in
    Alcotest.(check bool) "sized" true (get "/big" piped = big_body);
    Alcotest.(check bool) "sized again" true (get "/big" piped = big_body);
    Alcotest.(check int) "chunked" 100_000 (String.length (get "/stream" piped));
    Alcotest.(check string)
      "the same connection throughout" before (get_ok c (url "/peer")).body );
  with_client ~config:{ C.default_config with read_timeout = Some 5. }
  @@ fun c ->
  (* The second half is sent only once the first has been passed on: a
     pipe that held bytes back for more would wait for ever (its read
     timeout). *)
  let first_passed = Braid_sync.Promise.create () in
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s
        ("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
       ^ String.make 30_000 'a');
      Braid_sync.Promise.await first_passed;
      Net.write_string s (String.make 70_000 'b'))
    (fun port ->
      let seen = ref 0 in
      match
        C.request c GET (Printf.sprintf "http://127.0.0.1:%d/" port) (fun r ->
            C.Response.pipe r (fun b off len ->
                for i = off to off + len - 1 do
                  let expected =
                    if !seen + i - off < 30_000 then 'a' else 'b'
                  in
                  if Bytes.get b i <> expected then Alcotest.fail "wrong byte"
                done;
                seen := !seen + len;
                if !seen >= 30_000 then
                  ignore (Braid_sync.Promise.try_fill first_passed (Ok ()))))
      with
      | Ok (Ok ()) -> Alcotest.(check int) "all of it" 100_000 !seen
      | Ok (Error e) | Error e -> fail_error e);
  raw_server
    (fun _ s ->
      read_request s;
      Net.write_string s
        ("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
       ^ String.make 40_000 'a'))
    (fun port ->
      match
        C.request c GET (Printf.sprintf "http://127.0.0.1:%d/" port) (fun r ->
            C.Response.pipe r (fun _ _ _ -> ()))
      with
      | Ok (Error (Bad_response _ | Connection_lost _)) -> ()
      | Ok (Ok ()) -> Alcotest.fail "a body cut short was piped whole"
      | Ok (Error e) | Error e -> fail_error e)

let files () =
  let dir = Peers.temp_dir "braid-client-files" in
  let content = String.init 50_000 (fun i -> Char.chr (97 + (i mod 26))) in
  Peers.write_file (Filename.concat dir "f.txt") content;
  (* Python answers HTTP/1.0 and closes. *)
  Peers.python_http ~dir (fun ~port ->
      with_client @@ fun c ->
      let w = get_ok c (Printf.sprintf "http://127.0.0.1:%d/f.txt" port) in
      Alcotest.(check int) "python status" 200 w.status;
      Alcotest.(check bool) "python body" true (w.body = content);
      Alcotest.(check int)
        "python 404" 404
        (get_ok c (Printf.sprintf "http://127.0.0.1:%d/nothing" port)).status);
  Peers.nginx ~dir (fun ~port ->
      with_client @@ fun c ->
      let url = Printf.sprintf "http://127.0.0.1:%d/f.txt" port in
      let a = get_ok c url and b = get_ok c url in
      Alcotest.(check bool) "nginx body" true (a.body = content);
      Alcotest.(check (option string))
        "nginx keep-alive"
        (Braid_http.Headers.find a.headers "x-connection")
        (Braid_http.Headers.find b.headers "x-connection"))

let tls () =
  let certs = Peers.certs () in
  let trusting =
    match Braid_tls.Client_context.create ~ca_file:certs.ca () with
    | Ok t -> t
    | Error m -> Alcotest.fail m
  in
  let dir = Peers.temp_dir "braid-client-tls" in
  Peers.write_file (Filename.concat dir "f.txt") "secret";
  Peers.python_http ~tls:certs ~dir (fun ~port ->
      let url host = Printf.sprintf "https://%s:%d/f.txt" host port in
      with_client ~config:{ C.default_config with tls = Some trusting }
        (fun c ->
          Alcotest.(check string)
            "python over TLS" "secret" (get_ok c (url "localhost")).body;
          expect_error "a name the certificate does not hold"
            (function Tls_failed _ -> true | _ -> false)
            (C.get c (url "127.0.0.1")));
      (* The default: the system's store, which does not know the test CA. *)
      with_client (fun c ->
          expect_error "unknown CA"
            (function Tls_failed _ -> true | _ -> false)
            (C.get c (url "localhost"))));
  Peers.braid ~tls:(certs.chain, certs.key) router @@ fun ~port:_ ~tls_port ->
  let port = Option.get tls_port in
  with_client ~config:{ C.default_config with tls = Some trusting } @@ fun c ->
  let url = Printf.sprintf "https://localhost:%d/peer" port in
  let a = (get_ok c url).body and b = (get_ok c url).body in
  Alcotest.(check string) "TLS keep-alive" a b

(* One client, two loops, and a pool task. *)
let everywhere () =
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  let url = Printf.sprintf "http://127.0.0.1:%d/peer" port in
  Braid.Switch.run @@ fun sw ->
  let c = C.create ~sw () in
  let peers =
    Braid_io.run_domains ~domains:2 (fun ~domain:_ ->
        let a = (get_ok c url).body and b = (get_ok c url).body in
        Alcotest.(check string) "reused within its loop" a b;
        a)
  in
  (match peers with
  | [ a; b ] -> if a = b then Alcotest.fail "two loops shared a connection"
  | _ -> assert false);
  let pool = Braid_pool.create ~domains:1 () in
  Fun.protect ~finally:(fun () -> Braid_pool.shutdown pool) @@ fun () ->
  let w = Braid_pool.run pool (fun () -> get_ok c url) in
  Alcotest.(check int) "from a pool task" 200 w.status

let () =
  Alcotest.run "client"
    [
      ( "braid",
        [
          Alcotest.test_case "basics and keep-alive" `Quick basics;
          Alcotest.test_case "bodies both ways" `Quick bodies;
          Alcotest.test_case "redirects" `Quick redirects;
          Alcotest.test_case "timeouts" `Quick timeouts;
          Alcotest.test_case "cancellation" `Quick cancellation;
          Alcotest.test_case "loops and pool tasks" `Quick everywhere;
        ] );
      ( "peers",
        [
          Alcotest.test_case "misbehaving servers" `Quick misbehaving;
          Alcotest.test_case "pipe" `Quick pipe;
          Alcotest.test_case "switching protocols" `Quick switching;
          Alcotest.test_case "python and nginx" `Quick files;
          Alcotest.test_case "TLS" `Quick tls;
        ] );
    ]
