(* The proxy in a Braid server, in front of Braid, Python and raw upstreams
   that misbehave: forwarded fields, hop-by-hop fields, streaming both ways,
   balancing, passive health and retries, 502 and 504, upstreams that die
   mid-response or stall, a slow client, and smuggling attempts. *)

open Braid_web
module C = Braid_client
module P = Braid_proxy
module Net = Braid_io.Net

let fail_error e = Alcotest.failf "unexpected error: %s" (C.Error.to_string e)

(* An upstream that says who it is and what it got. *)
let upstream name =
  Router.empty
  |> Router.get "/api/who" (fun _ -> Response.string name)
  |> Router.get "/api/headers" (fun r ->
         Response.string
           (String.concat "\n"
              (List.map
                 (fun (n, v) -> String.lowercase_ascii n ^ ": " ^ v)
                 (Braid_http.Headers.to_list r.head.headers))))
  |> Router.post "/api/echo" (fun r ->
         match Handler.body_string r with
         | Ok s -> Response.string ~headers:[ ("X-Upstream", name) ] s
         | Error e -> Handler.bad_request e)
  |> Router.get "/api/big" (fun _ ->
         Response.stream (fun w ->
             for _ = 1 to 200 do
               Response.Writer.write w (String.make 1000 'x')
             done))
  |> Router.get "/v1/who" (fun _ -> Response.string ("v1 " ^ name))

(* A Braid server whose only route is the proxy, in front of [upstreams]. *)
let with_proxy ?(client = P.client_config) ?(config = P.default)
    ?(outside = Fun.id) upstreams f =
  Braid.Switch.run @@ fun sw ->
  let c = C.create ~sw ~config:client () in
  let proxy =
    match P.create ~client:c { config with upstreams } with
    | Ok p -> p
    | Error m -> Alcotest.fail m
  in
  Peers.braid
    (Router.empty |> Router.use outside
    |> Router.use (P.middleware ~prefix:"/api" proxy))
  @@ fun ~port ~tls_port:_ -> f ~proxy port

let with_client f =
  Braid_io.run @@ fun () ->
  Braid.Switch.run @@ fun sw ->
  f (C.create ~sw ~config:{ C.default_config with redirects = Never } ())

let get c url = match C.get c url with Ok w -> w | Error e -> fail_error e
let local port = Printf.sprintf "http://127.0.0.1:%d" port

let contains text sub =
  let n = String.length sub in
  let rec go i =
    i + n <= String.length text && (String.sub text i n = sub || go (i + 1))
  in
  go 0

(* One request written as is, the response read until the server closes. *)
let raw_exchange port raw =
  Braid.Switch.run @@ fun sw ->
  let s = Net.connect ~sw (Net.tcp "127.0.0.1" port) in
  Net.write_string s raw;
  let out = Buffer.create 4096 and buf = Bytes.create 4096 in
  let rec go () =
    match Net.read_into s buf 0 4096 with
    | 0 -> Buffer.contents out
    | n ->
        Buffer.add_subbytes out buf 0 n;
        go ()
  in
  go ()

let forwarding () =
  Peers.braid (upstream "a") @@ fun ~port:up ~tls_port:_ ->
  with_proxy [ local up ] @@ fun ~proxy:_ port ->
  with_client @@ fun c ->
  Alcotest.(check string) "forwarded" "a" (get c (local port ^ "/api/who")).body;
  Alcotest.(check int)
    "outside the prefix" 404 (get c (local port ^ "/apix")).status;
  let seen =
    raw_exchange port
      (Printf.sprintf
         "GET /api/headers HTTP/1.1\r\n\
          Host: 127.0.0.1:%d\r\n\
          Connection: close, X-Secret\r\n\
          X-Secret: 1\r\n\
          Keep-Alive: 5\r\n\
          TE: trailers\r\n\
          X-Forwarded-For: 10.0.0.1\r\n\
          X-Kept: yes\r\n\
          \r\n"
         port)
  in
  (* What the upstream saw: the body of the proxy's response. *)
  let seen =
    let rec find i =
      if String.sub seen i 4 = "\r\n\r\n" then i + 4 else find (i + 1)
    in
    let start = find 0 in
    String.sub seen start (String.length seen - start)
  in
  List.iter
    (fun line ->
      if not (contains seen line) then Alcotest.failf "%S not in:\n%s" line seen)
    [
      "x-kept: yes";
      "x-forwarded-for: 10.0.0.1, 127.0.0.1";
      "x-forwarded-proto: http";
      Printf.sprintf "x-forwarded-host: 127.0.0.1:%d" port;
      Printf.sprintf "forwarded: for=127.0.0.1;host=\"127.0.0.1:%d\";proto=http"
        port;
      Printf.sprintf "host: 127.0.0.1:%d" port;
    ];
  List.iter
    (fun bad ->
      if contains seen bad then Alcotest.failf "%S forwarded:\n%s" bad seen)
    [ "x-secret"; "keep-alive"; "te:"; "connection" ];
  (* Bodies both ways, streamed. *)
  let big = String.init 500_000 (fun i -> Char.chr (i mod 251)) in
  let chunked =
    C.Body.stream (fun write ->
        let b = Bytes.of_string big in
        let rec go off =
          if off < Bytes.length b then (
            let n = min 8192 (Bytes.length b - off) in
            write b off n;
            go (off + n))
        in
        go 0)
  in
  (match
     C.request c ~body:chunked POST
       (local port ^ "/api/echo")
       C.Response.to_string
   with
  | Ok (Ok s) -> Alcotest.(check bool) "chunked upload through" true (s = big)
  | Ok (Error e) | Error e -> fail_error e);
  Alcotest.(check int)
    "streamed response" 200_000
    (String.length (get c (local port ^ "/api/big")).body)

(* X-Forwarded-Proto and Forwarded say https for a request that came over
   TLS, http otherwise (the same proxy behind both listeners). *)
let forwarded_proto () =
  let certs = Peers.certs () in
  let trusting =
    match Braid_tls.Client_context.create ~ca_file:certs.ca () with
    | Ok t -> t
    | Error m -> Alcotest.fail m
  in
  Peers.braid (upstream "a") @@ fun ~port:up ~tls_port:_ ->
  Braid.Switch.run @@ fun sw ->
  let proxy =
    match
      P.create
        ~client:(C.create ~sw ~config:P.client_config ())
        { P.default with upstreams = [ local up ] }
    with
    | Ok p -> p
    | Error m -> Alcotest.fail m
  in
  Peers.braid ~tls:(certs.chain, certs.key)
    (Router.empty |> Router.use (P.middleware ~prefix:"/api" proxy))
  @@ fun ~port ~tls_port ->
  Braid_io.run @@ fun () ->
  Braid.Switch.run @@ fun sw ->
  let c =
    C.create ~sw ~config:{ C.default_config with tls = Some trusting } ()
  in
  let headers url =
    match C.get c url with Ok w -> w.body | Error e -> fail_error e
  in
  let over_tls =
    headers
      (Printf.sprintf "https://localhost:%d/api/headers" (Option.get tls_port))
  and plain = headers (local port ^ "/api/headers") in
  List.iter
    (fun (text, what) ->
      if not (contains text what) then Alcotest.failf "%S not in:\n%s" what text)
    [
      (over_tls, "x-forwarded-proto: https");
      (over_tls, "proto=https");
      (plain, "x-forwarded-proto: http\n");
      (plain, "proto=http");
    ]

let rewriting () =
  Peers.braid (upstream "a") @@ fun ~port:up ~tls_port:_ ->
  with_proxy [ local up ^ "/v1" ] @@ fun ~proxy:_ port ->
  with_client @@ fun c ->
  Alcotest.(check string)
    "prefix replaced" "v1 a" (get c (local port ^ "/api/who")).body

let balancing () =
  Peers.braid (upstream "a") @@ fun ~port:a ~tls_port:_ ->
  Peers.braid (upstream "b") @@ fun ~port:b ~tls_port:_ ->
  with_proxy [ local a; local b ] @@ fun ~proxy port ->
  with_client @@ fun c ->
  let names = List.init 6 (fun _ -> (get c (local port ^ "/api/who")).body) in
  Alcotest.(check int)
    "round robin: three each" 3
    (List.length (List.filter (( = ) "a") names));
  (* Reconfigured live: only b. *)
  (match P.update proxy { P.default with upstreams = [ local b ] } with
  | Ok () -> ()
  | Error m -> Alcotest.fail m);
  let names = List.init 4 (fun _ -> (get c (local port ^ "/api/who")).body) in
  Alcotest.(check (list string)) "after update" [ "b"; "b"; "b"; "b" ] names;
  (match
     P.update proxy
       {
         P.default with
         upstreams = [ local a; local b ];
         balance = Least_connections;
       }
   with
  | Ok () -> ()
  | Error m -> Alcotest.fail m);
  let names = List.init 4 (fun _ -> (get c (local port ^ "/api/who")).body) in
  Alcotest.(check int)
    "least connections, ties in turn" 2
    (List.length (List.filter (( = ) "a") names));
  match P.update proxy { P.default with upstreams = [ "ftp://x" ] } with
  | Ok () -> Alcotest.fail "a bad upstream was accepted"
  | Error _ -> ()

let health_and_retries () =
  let dead = Peers.free_port () in
  Peers.braid (upstream "a") @@ fun ~port:a ~tls_port:_ ->
  with_proxy
    ~config:{ P.default with max_fails = 1; fail_timeout = 30. }
    [ local dead; local a ]
  @@ fun ~proxy:_ port ->
  with_client @@ fun c ->
  (* Every request succeeds: refused connections are retried on a, even a
     POST (nothing reached the dead one). *)
  for _ = 1 to 4 do
    Alcotest.(check string)
      "GET retried" "a" (get c (local port ^ "/api/who")).body;
    match
      C.request c ~body:(C.Body.string "p") POST
        (local port ^ "/api/echo")
        C.Response.to_string
    with
    | Ok (Ok s) -> Alcotest.(check string) "POST retried" "p" s
    | Ok (Error e) | Error e -> fail_error e
  done;
  with_proxy [ local dead ] @@ fun ~proxy:_ port ->
  Alcotest.(check int)
    "no upstream up: 502" 502 (get c (local port ^ "/api/who")).status

(* Active checks eject an upstream whose check fails, though requests to
   it would succeed, and restore it once its check passes again. *)
let active_health () =
  let healthy = Atomic.make true in
  let checked name =
    upstream name
    |> Router.get "/health" (fun _ ->
           if Atomic.get healthy then Response.string "ok"
           else Response.error 503 "")
  in
  Peers.braid (checked "a") @@ fun ~port:a ~tls_port:_ ->
  Peers.braid (upstream "b") @@ fun ~port:b ~tls_port:_ ->
  let config =
    {
      P.default with
      health_check = Some (P.health_check ~interval:0.1 ~timeout:1. "/health");
    }
  in
  (* b has no /health: a 404 fails its check, so b is out from the start
     (but tried anyway while a is out too). *)
  with_proxy ~config [ local a; local b ] @@ fun ~proxy port ->
  with_client @@ fun c ->
  Braid.Switch.run @@ fun sw ->
  let checks = Braid.Switch.fork sw (fun () -> P.check_health proxy) in
  let answers n =
    List.sort_uniq compare
      (List.init n (fun _ -> (get c (local port ^ "/api/who")).body))
  in
  Braid_io.Time.sleep 0.5;
  Alcotest.(check (list string)) "b failed its check" [ "a" ] (answers 6);
  Atomic.set healthy false;
  Braid_io.Time.sleep 0.5;
  Alcotest.(check (list string)) "both out: both tried" [ "a"; "b" ] (answers 6);
  Atomic.set healthy true;
  Braid_io.Time.sleep 0.5;
  Alcotest.(check (list string)) "a restored" [ "a" ] (answers 6);
  Braid.Fiber.cancel checks

(* Raw upstreams, on a loop of the test's own. *)
let raw_upstream script f =
  Braid.Switch.run @@ fun sw ->
  let listener = Net.listen ~sw (Net.tcp "127.0.0.1" 0) in
  let port =
    match Net.local_addr listener with
    | ADDR_INET (_, p) -> p
    | _ -> assert false
  in
  let hits = ref 0 in
  let server =
    Braid.Switch.fork sw (fun () ->
        while true do
          Net.accept_fork ~sw listener ~on_error:ignore (fun s _ ->
              let buf = Bytes.create 65536 in
              let n = Net.read_into s buf 0 65536 in
              if n > 0 then (
                incr hits;
                script s))
        done)
  in
  Fun.protect
    ~finally:(fun () -> Braid.Fiber.cancel server)
    (fun () -> f port hits)

(* What the upstream has sent reaches the client before the upstream sends
   more: the upstream waits for the client to have its first bytes (a proxy
   that held them back for more would wait for ever: the client's read
   timeout fails the test). Both framings. *)
let not_held_back () =
  with_client @@ fun c ->
  List.iter
    (fun (framing, first, rest) ->
      let got_first = Braid_sync.Promise.create () in
      raw_upstream
        (fun s ->
          Net.write_string s first;
          Braid_sync.Promise.await got_first;
          Net.write_string s rest)
        (fun up _ ->
          with_proxy [ local up ] @@ fun ~proxy:_ port ->
          match C.send c GET (local port ^ "/api/events") with
          | Error e -> fail_error e
          | Ok r ->
              let buf = Bytes.create 100 in
              let read () =
                match
                  Braid_io.Time.timeout 3. (fun () ->
                      C.Response.read r buf 0 100)
                with
                | Some (Ok n) -> Bytes.sub_string buf 0 n
                | Some (Error e) -> fail_error e
                | None ->
                    Alcotest.failf "%s: the first bytes were held back" framing
              in
              Alcotest.(check string) (framing ^ ": first") "first" (read ());
              ignore (Braid_sync.Promise.try_fill got_first (Ok ()));
              Alcotest.(check string) (framing ^ ": rest") "last" (read ());
              C.Response.close r))
    [
      ("sized", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nfirst", "last");
      ( "chunked",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n",
        "4\r\nlast\r\n0\r\n\r\n" );
    ]

let misbehaving_upstreams () =
  let client = { P.client_config with first_byte_timeout = Some 0.5 } in
  with_client @@ fun c ->
  (* Killed mid-response: the client sees a truncated body. *)
  raw_upstream
    (fun s ->
      Net.write_string s "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nabc")
    (fun up _ ->
      with_proxy ~client [ local up ] @@ fun ~proxy:_ port ->
      match C.get c (local port ^ "/api/x") with
      | Error (Bad_response _) -> ()
      | Ok w ->
          Alcotest.failf "a cut body arrived whole (%d bytes)"
            (String.length w.body)
      | Error e -> fail_error e);
  (* Stalls before its head: 504. *)
  raw_upstream
    (fun _ -> Braid_io.Time.sleep 10.)
    (fun up _ ->
      with_proxy ~client ~config:{ P.default with retries = 0 } [ local up ]
      @@ fun ~proxy:_ port ->
      Alcotest.(check int)
        "stalled: 504" 504 (get c (local port ^ "/api/x")).status);
  (* Smuggling-shaped responses: 502, never passed on. *)
  raw_upstream
    (fun s ->
      Net.write_string s
        "HTTP/1.1 200 OK\r\n\
         Content-Length: 4\r\n\
         Transfer-Encoding: chunked\r\n\
         \r\n\
         0\r\n\
         \r\n\
         HTTP/1.1 200 OK\r\n\
         \r\n")
    (fun up _ ->
      with_proxy ~client ~config:{ P.default with retries = 0 } [ local up ]
      @@ fun ~proxy:_ port ->
      Alcotest.(check int)
        "CL+TE from upstream: 502" 502 (get c (local port ^ "/api/x")).status);
  raw_upstream
    (fun s ->
      Net.write_string s
        (String.concat ""
           (List.init 200 (fun i -> Printf.sprintf "X-%d: y\r\n" i))))
    (fun up _ ->
      with_proxy ~client ~config:{ P.default with retries = 0 } [ local up ]
      @@ fun ~proxy:_ port ->
      Alcotest.(check int)
        "oversized head: 502" 502 (get c (local port ^ "/api/x")).status)

(* Smuggling attempts by a client: the proxy's parser refuses them, and
   the upstream never sees a request. *)
let smuggling () =
  Braid_io.run @@ fun () ->
  raw_upstream
    (fun s ->
      Net.write_string s "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    (fun up hits ->
      with_proxy [ local up ] @@ fun ~proxy:_ port ->
      let send raw =
        Braid.Switch.run @@ fun sw ->
        let s = Net.connect ~sw (Net.tcp "127.0.0.1" port) in
        Net.write_string s raw;
        let buf = Bytes.create 4096 in
        let n = Net.read_into s buf 0 4096 in
        Bytes.sub_string buf 0 (min n 12)
      in
      List.iter
        (fun raw ->
          Alcotest.(check string)
            "refused" "HTTP/1.1 400"
            (String.sub (send raw) 0 12))
        [
          "POST /api/x HTTP/1.1\r\n\
           Host: a\r\n\
           Content-Length: 5\r\n\
           Transfer-Encoding: chunked\r\n\
           \r\n\
           0\r\n\
           \r\n\
           GET /api/smuggled HTTP/1.1\r\n\
           Host: a\r\n\
           \r\n";
          "POST /api/x HTTP/1.1\r\n\
           Host: a\r\n\
           Transfer-Encoding: chunked\r\n\
           Content-Length: 5\r\n\
           \r\n\
           0\r\n\
           \r\n";
          "POST /api/x HTTP/1.1\r\n\
           Host: a\r\n\
           Content-Length: 5\r\n\
           Content-Length: 6\r\n\
           \r\n\
           hello";
          "POST /api/x HTTP/1.1\r\n\
           Host: a\r\n\
           Transfer-Encoding: chunked, identity\r\n\
           \r\n\
           0\r\n\
           \r\n";
          "POST /api/x HTTP/1.1\r\n\
           Host: a\r\n\
           Transfer-Encoding : chunked\r\n\
           \r\n\
           0\r\n\
           \r\n";
        ];
      Alcotest.(check int) "nothing reached the upstream" 0 !hits)

(* A client that reads slowly gets every byte: the proxy waits for it
   instead of buffering the upstream's response whole. *)
let slow_client () =
  Peers.braid (upstream "a") @@ fun ~port:up ~tls_port:_ ->
  with_proxy [ local up ] @@ fun ~proxy:_ port ->
  with_client @@ fun c ->
  match
    C.request c GET
      (local port ^ "/api/big")
      (fun r ->
        let buf = Bytes.create 8192 and total = ref 0 in
        let rec go () =
          match C.Response.read r buf 0 8192 with
          | Ok 0 -> !total
          | Ok n ->
              total := !total + n;
              Braid_io.Time.sleep 0.005;
              go ()
          | Error e -> fail_error e
        in
        go ())
  with
  | Ok n -> Alcotest.(check int) "every byte" 200_000 n
  | Error e -> fail_error e

(* The head of a response read raw: up to its empty line. *)
let head_of text =
  let rec find i =
    if i + 4 > String.length text then text
    else if String.sub text i 4 = "\r\n\r\n" then String.sub text 0 i
    else find (i + 1)
  in
  String.lowercase_ascii (find 0)

(* The upstream's Content-Length is passed on (a GET's and a HEAD's), and
   chunked coding only where the upstream had no length. *)
let content_length () =
  Peers.braid (upstream "abc") @@ fun ~port:up ~tls_port:_ ->
  with_proxy [ local up ] @@ fun ~proxy:_ port ->
  Braid_io.run @@ fun () ->
  let exchange meth path =
    head_of
      (raw_exchange port
         (Printf.sprintf
            "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" meth path))
  in
  let has what head =
    if not (contains head what) then Alcotest.failf "%S not in:\n%s" what head
  and lacks what head =
    if contains head what then Alcotest.failf "%S in:\n%s" what head
  in
  let get = exchange "GET" "/api/who" in
  has "content-length: 3\r\n" get;
  lacks "transfer-encoding" get;
  let head = exchange "HEAD" "/api/who" in
  has "content-length: 3\r\n" head;
  lacks "transfer-encoding" head;
  let streamed = exchange "GET" "/api/big" in
  has "transfer-encoding: chunked" streamed;
  lacks "content-length" streamed;
  let streamed_head = exchange "HEAD" "/api/big" in
  has "transfer-encoding: chunked" streamed_head;
  lacks "content-length" streamed_head;
  (* Kept alive after a sized body: two answers on one connection. *)
  let two =
    raw_exchange port
      "GET /api/who HTTP/1.1\r\n\
       Host: x\r\n\
       \r\n\
       GET /api/who HTTP/1.1\r\n\
       Host: x\r\n\
       Connection: close\r\n\
       \r\n"
  in
  if not (contains two "\r\n\r\nabcHTTP/1.1 200 OK") then
    Alcotest.failf "not two responses:\n%s" two

(* The engine's side of a sized stream (Response.stream ~length): the
   length goes out as Content-Length; a stream that writes more has the
   excess withheld and one that writes fewer is cut, the connection closed
   either way, so that a kept-alive client never reads a wrong frame; a HEAD
   gets the length and runs no stream, and its Handler.at_end runs. *)
let sized_streams () =
  let ended = Atomic.make 0 in
  let router =
    Router.empty
    |> Router.get "/exact" (fun r ->
           Handler.at_end r (fun () -> Atomic.incr ended);
           Response.stream ~length:5 (fun w -> Response.Writer.write w "abcde"))
    |> Router.get "/over" (fun _ ->
           Response.stream ~length:5 (fun w ->
               Response.Writer.write w "abc";
               Response.Writer.write w "defgh"))
    |> Router.get "/under" (fun _ ->
           Response.stream ~length:5 (fun w -> Response.Writer.write w "abc"))
  in
  Peers.braid router @@ fun ~port ~tls_port:_ ->
  Braid_io.run @@ fun () ->
  let exchange raw = raw_exchange port raw in
  let two path =
    exchange
      (Printf.sprintf
         "GET %s HTTP/1.1\r\n\
          Host: x\r\n\
          \r\n\
          GET /exact HTTP/1.1\r\n\
          Host: x\r\n\
          Connection: close\r\n\
          \r\n"
         path)
  in
  let exact = two "/exact" in
  if
    not
      (contains exact "content-length: 5\r\n"
      || contains exact "Content-Length: 5\r\n")
  then Alcotest.failf "no Content-Length:\n%s" exact;
  if not (contains exact "\r\n\r\nabcdeHTTP/1.1 200") then
    Alcotest.failf "not two answers:\n%s" exact;
  let over = two "/over" in
  if not (String.ends_with ~suffix:"\r\n\r\nabc" over) then
    Alcotest.failf "more than the length, or kept alive:\n%s" over;
  let under = two "/under" in
  if not (String.ends_with ~suffix:"\r\n\r\nabc" under) then
    Alcotest.failf "a cut body kept alive:\n%s" under;
  let head =
    exchange "HEAD /exact HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
  in
  if
    not
      (contains head "ength: 5\r\n" && String.ends_with ~suffix:"\r\n\r\n" head)
  then Alcotest.failf "HEAD:\n%s" head;
  (* Two exchanges of /exact by GET, one by HEAD (its stream never ran). *)
  Alcotest.(check int) "at_end ran for each" 3 (Atomic.get ended)

(* A middleware that answers something else than the proxied response (its
   stream never runs): the upstream connection and its pool slot are given
   back all the same. With one connection per upstream, a second request
   would otherwise wait for that slot forever. *)
let dropped_response () =
  Peers.braid (upstream "a") @@ fun ~port:up ~tls_port:_ ->
  let outside next r =
    let (_ : Response.t) = next r in
    Response.string "replaced"
  in
  with_proxy ~outside
    ~client:{ P.client_config with max_connections = 1 }
    [ local up ]
  @@ fun ~proxy:_ port ->
  Braid_io.run @@ fun () ->
  Braid.Switch.run @@ fun sw ->
  let c =
    C.create ~sw
      ~config:{ C.default_config with first_byte_timeout = Some 3. }
      ()
  in
  for i = 1 to 3 do
    match C.get c (local port ^ "/api/big") with
    | Ok w ->
        Alcotest.(check string) (Printf.sprintf "answer %d" i) "replaced" w.body
    | Error e ->
        Alcotest.failf "request %d: %s (the first one's upstream slot is held)"
          i (C.Error.to_string e)
  done

let python_upstream () =
  let dir = Peers.temp_dir "braid-proxy-py" in
  Unix.mkdir (Filename.concat dir "api") 0o755;
  Peers.write_file (Filename.concat dir "api/f.txt") "from python";
  Peers.python_http ~dir @@ fun ~port:up ->
  with_proxy [ local up ] @@ fun ~proxy:_ port ->
  with_client @@ fun c ->
  let w = get c (local port ^ "/api/f.txt") in
  Alcotest.(check int) "status" 200 w.status;
  Alcotest.(check string) "body" "from python" w.body

let () =
  Alcotest.run "proxy"
    [
      ( "forwarding",
        [
          Alcotest.test_case "fields and bodies" `Quick forwarding;
          Alcotest.test_case "prefix rewriting" `Quick rewriting;
          Alcotest.test_case "forwarded proto" `Quick forwarded_proto;
          Alcotest.test_case "python upstream" `Quick python_upstream;
          Alcotest.test_case "slow client" `Quick slow_client;
          Alcotest.test_case "content-length kept" `Quick content_length;
          Alcotest.test_case "sized streams" `Quick sized_streams;
          Alcotest.test_case "response dropped unsent" `Quick dropped_response;
          Alcotest.test_case "streams not held back" `Quick not_held_back;
        ] );
      ( "upstreams",
        [
          Alcotest.test_case "balancing and update" `Quick balancing;
          Alcotest.test_case "health and retries" `Quick health_and_retries;
          Alcotest.test_case "active health checks" `Quick active_health;
          Alcotest.test_case "misbehaving" `Quick misbehaving_upstreams;
          Alcotest.test_case "smuggling attempts" `Quick smuggling;
        ] );
    ]
