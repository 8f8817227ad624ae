(* Integration: the real server on a real socket (an ephemeral port of
   127.0.0.1), driven by curl, Python's http.client and raw sockets; and the
   [braid] binary itself. Nothing here measures time: curl's --max-time and
   the watchdog only turn a hang into a failure. *)

open Braid_server
open Braid_web
open Text_and_process
module Promise = Braid_sync.Promise

(* {1 Helpers} *)

(* Runs [prog args] with stdout and stderr into separate files. *)
let run_process prog args =
  let out = Filename.temp_file "braid-test" ".out"
  and err = Filename.temp_file "braid-test" ".err" in
  let fd path = Unix.openfile path [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let out_fd = fd out and err_fd = fd err in
  let null = Unix.openfile "/dev/null" [ O_RDONLY ] 0 in
  let pid =
    Unix.create_process prog (Array.of_list (prog :: args)) null out_fd err_fd
  in
  List.iter Unix.close [ out_fd; err_fd; null ];
  let status = waitpid pid in
  let o = read_file out and e = read_file err in
  Sys.remove out;
  Sys.remove err;
  (match status with
  | WEXITED 0 -> ()
  | WEXITED n -> Alcotest.failf "%s exited with %d: %s" prog n e
  | WSIGNALED n | WSTOPPED n -> Alcotest.failf "%s killed by signal %d" prog n);
  (o, e)

let curl args =
  run_process "curl"
    ("--silent" :: "--show-error" :: "--max-time" :: "30" :: args)

let python script args = run_process "python3" ("-c" :: script :: args)

(* {1 The server under test} *)

type site = { url : string; port : int; big : string }

let big_content = String.init 200_000 (fun i -> Char.chr (i * 7 mod 256))

(* Larger than the file cache and the socket buffers: sent with sendfile. *)
let huge_size = 3 * 1024 * 1024

let huge_content =
  String.init huge_size (fun i -> Char.chr (((i * 13) + (i / 509)) land 255))

let make_site () =
  let dir = Unix.realpath (Filename.temp_dir "braid-site" "") in
  write_file (dir ^ "/hello.txt") "hello, world\n";
  write_file (dir ^ "/big.bin") big_content;
  write_file (dir ^ "/huge.bin") huge_content;
  Unix.mkdir (dir ^ "/sub") 0o755;
  write_file (dir ^ "/sub/index.html") "<p>sub</p>";
  (* A precompressed variant, made by the real gzip. *)
  write_file (dir ^ "/page.txt") "a page, also served gzipped\n";
  if Sys.command ("gzip -k " ^ Filename.quote (dir ^ "/page.txt")) <> 0 then
    Alcotest.fail "gzip failed";
  dir

let with_server f =
  let root = make_site () in
  let pool = Braid_pool.create ~domains:1 () in
  let router =
    Braid_cli.Demo.routes pool Router.empty
    |> Router.add GET "/stream" (fun _ ->
           Response.stream (fun w ->
               for i = 1 to 100 do
                 Response.Writer.write w (Printf.sprintf "line %d\n" i)
               done))
    |> Router.add GET "/boom" (fun _ -> failwith "boom (expected by the test)")
    (* A handler trusting user input for a Location, and one building an
       invalid status: both refused at construction, answered 500. *)
    |> Router.add GET "/go" (fun r ->
           let target =
             match r.query with
             | Some q when String.starts_with ~prefix:"to=" q -> (
                 match
                   Braid_http.Url_path.percent_decode
                     (String.sub q 3 (String.length q - 3))
                 with
                 | Ok t -> t
                 | Error _ -> "/")
             | _ -> "/"
           in
           Response.redirect target)
    |> Router.add GET "/status/:n" (fun r ->
           Response.empty (int_of_string (Option.get (Handler.param r "n"))))
  in
  let settings = Real_services.settings ~log_level:Error router in
  let config =
    {
      Config.default with
      root = Some root;
      precompressed = true;
      listen = Braid_io.Net.tcp "127.0.0.1" 0;
    }
  in
  let server =
    match Server.create ~settings config with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  Fun.protect
    ~finally:(fun () ->
      Braid_pool.shutdown pool;
      ignore (Sys.command ("rm -rf " ^ Filename.quote root)))
    (fun () ->
      serving server (fun port ->
          f
            {
              url = Printf.sprintf "http://127.0.0.1:%d" port;
              port;
              big = root ^ "/big.bin";
            }))

(* A blocking raw socket: send [data] in one write, read until the server
   closes. *)
let raw port data =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
      send s data;
      read_to_end s)

let statuses rs = List.map (fun (r : Wire.response) -> r.status) rs

let reversed s =
  let n = String.length s in
  String.init n (fun i -> s.[n - 1 - i])

(* {1 curl} *)

let curl_static site () =
  let out, _ = curl [ "--include"; site.url ^ "/hello.txt" ] in
  match Wire.parse out with
  | [ r ], "" ->
      Alcotest.(check int) "status" 200 r.status;
      Alcotest.(check string) "body" "hello, world\n" r.body;
      Alcotest.(check (option string))
        "type" (Some "text/plain")
        (Wire.header r "content-type");
      Alcotest.(check bool) "date" true (Wire.header r "date" <> None)
  | _ -> Alcotest.failf "unexpected: %S" out

let curl_keep_alive site () =
  let _, err =
    curl
      [
        "--verbose";
        "-o";
        "/dev/null";
        "-o";
        "/dev/null";
        "-o";
        "/dev/null";
        site.url ^ "/hello.txt";
        site.url ^ "/big.bin";
        site.url ^ "/fib/10";
      ]
  in
  Alcotest.(check int) "one connection" 1 (count err "Connected to");
  Alcotest.(check int)
    "re-used twice" 2
    (count err "Re-using existing connection")

let curl_chunked_upload site () =
  let out, err =
    curl
      [
        "--verbose";
        "-H";
        "Transfer-Encoding: chunked";
        "--data-binary";
        "@" ^ site.big;
        site.url ^ "/reverse";
      ]
  in
  Alcotest.(check bool)
    "sent chunked" true
    (contains err "Transfer-Encoding: chunked");
  Alcotest.(check bool) "reversed" true (out = reversed big_content)

let curl_continue site () =
  let out, err =
    curl
      [
        "--verbose";
        "-H";
        "Expect: 100-continue";
        "--data-binary";
        "@" ^ site.big;
        site.url ^ "/reverse";
      ]
  in
  Alcotest.(check bool)
    "100 Continue received" true
    (contains err "HTTP/1.1 100 Continue");
  Alcotest.(check bool) "reversed" true (out = reversed big_content)

(* curl asks for gzip and decodes it; the variant's ETag revalidates it. *)
let curl_precompressed site () =
  let url = site.url ^ "/page.txt" in
  let body, _ = curl [ "--compressed"; url ] in
  Alcotest.(check string) "decoded" "a page, also served gzipped\n" body;
  let head, _ = curl [ "--head"; "-H"; "Accept-Encoding: gzip"; url ] in
  let r = List.hd (fst (Wire.parse ~heads:[ 0 ] head)) in
  Alcotest.(check (option string))
    "Content-Encoding" (Some "gzip")
    (Wire.header r "content-encoding");
  Alcotest.(check (option string))
    "Vary" (Some "Accept-Encoding") (Wire.header r "vary");
  let code, _ =
    curl
      [
        "-o";
        "/dev/null";
        "--write-out";
        "%{http_code}";
        "-H";
        "Accept-Encoding: gzip";
        "-H";
        "If-None-Match: " ^ Option.get (Wire.header r "etag");
        url;
      ]
  in
  Alcotest.(check string) "revalidated" "304" code;
  let plain, _ = curl [ url ] in
  Alcotest.(check string)
    "without Accept-Encoding: the file" "a page, also served gzipped\n" plain

let curl_304 site () =
  let out, _ = curl [ "--head"; site.url ^ "/hello.txt" ] in
  let r = List.hd (fst (Wire.parse ~heads:[ 0 ] out)) in
  let last_modified = Option.get (Wire.header r "last-modified") in
  let code args =
    fst
      (curl
         ([ "-o"; "/dev/null"; "--write-out"; "%{http_code}" ]
         @ args
         @ [ site.url ^ "/hello.txt" ]))
  in
  Alcotest.(check string)
    "not modified" "304"
    (code [ "-H"; "If-Modified-Since: " ^ last_modified ]);
  Alcotest.(check string)
    "modified since long ago" "200"
    (code [ "-H"; "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT" ]);
  Alcotest.(check string)
    "curl -z with a date" "304"
    (code [ "-z"; last_modified ])

let curl_range site () =
  let out, _ =
    curl
      [
        "--range";
        "1000-1099";
        "--write-out";
        "\n%{http_code}";
        site.url ^ "/big.bin";
      ]
  in
  Alcotest.(check string)
    "206 and the slice"
    (String.sub big_content 1000 100 ^ "\n206")
    out;
  let out, _ =
    curl [ "--include"; "--range"; "300000-"; site.url ^ "/big.bin" ]
  in
  let r = List.hd (fst (Wire.parse out)) in
  Alcotest.(check int) "416" 416 r.status;
  Alcotest.(check (option string))
    "Content-Range" (Some "bytes */200000")
    (Wire.header r "content-range")

let curl_head_and_demo site () =
  let out, _ = curl [ "--head"; site.url ^ "/big.bin" ] in
  let r = List.hd (fst (Wire.parse ~heads:[ 0 ] out)) in
  Alcotest.(check (option string))
    "HEAD length" (Some "200000")
    (Wire.header r "content-length");
  Alcotest.(check string) "fib" "6765\n" (fst (curl [ site.url ^ "/fib/20" ]));
  let out, _ =
    curl
      [ "--write-out"; "%{http_code}"; "-o"; "/dev/null"; site.url ^ "/fib/99" ]
  in
  Alcotest.(check string) "n too large" "400" out;
  let out, _ = curl [ "--include"; "--raw"; site.url ^ "/stream" ] in
  let r = List.hd (fst (Wire.parse out)) in
  Alcotest.(check bool) "chunked stream" true r.chunked;
  Alcotest.(check int) "stream lines" 100 (count r.body "\n");
  let out, _ = curl [ "--include"; site.url ^ "/sub" ] in
  let r = List.hd (fst (Wire.parse out)) in
  Alcotest.(check (option string))
    "redirect" (Some "/sub/") (Wire.header r "location");
  let out, _ = curl [ "--location"; site.url ^ "/sub" ] in
  Alcotest.(check string) "index after redirect" "<p>sub</p>" out

(* A 3 MiB file, by sendfile: whole (its checksum), a range in the middle,
   several requests on one connection, and HEAD, which sends no body. *)
let curl_sendfile site () =
  let url = site.url ^ "/huge.bin" in
  let out, _ = curl [ url ] in
  Alcotest.(check int) "length" huge_size (String.length out);
  Alcotest.(check string)
    "checksum"
    (Digest.to_hex (Digest.string huge_content))
    (Digest.to_hex (Digest.string out));
  let first = 1_234_567 and last = 2_345_678 in
  let out, _ =
    curl
      [
        "--range";
        Printf.sprintf "%d-%d" first last;
        "--write-out";
        "\n%{http_code}";
        url;
      ]
  in
  Alcotest.(check bool)
    "206 and the slice" true
    (String.equal out
       (String.sub huge_content first (last - first + 1) ^ "\n206"));
  (* Three in a row on one connection: each ends where the next begins. *)
  let out, _ = curl [ url; url; url ] in
  Alcotest.(check bool)
    "three on one connection" true
    (String.equal out (huge_content ^ huge_content ^ huge_content));
  (* HEAD: the length, no body (the connection goes on: a body sent would
     be taken for the next response). *)
  let out, _ = curl [ "--head"; url; "--head"; site.url ^ "/hello.txt" ] in
  let rs = fst (Wire.parse ~heads:[ 0; 1 ] out) in
  Alcotest.(check (list int)) "two HEADs" [ 200; 200 ] (statuses rs);
  Alcotest.(check (option string))
    "HEAD length"
    (Some (string_of_int huge_size))
    (Wire.header (List.hd rs) "content-length");
  Alcotest.(check string) "HEAD: no body" "" (List.hd rs).body

(* A file that shrinks while it is sent: the head promised its old length,
   so the server closes the connection after what the file still holds,
   without hanging and without sending bytes the file never had. 32 MiB,
   more than the socket buffers of both ends hold, so that most of it is
   still to be sent when it shrinks. *)
let shrinking_file site () =
  let size = 32 * 1024 * 1024 and shrunk = 1024 * 1024 in
  let content = String.init size (fun i -> Char.chr (i / 4096 land 255)) in
  let path = Filename.concat (Filename.dirname site.big) "shrinking.bin" in
  write_file path content;
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () ->
      Unix.close s;
      Sys.remove path)
    (fun () ->
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, site.port));
      send s "GET /shrinking.bin HTTP/1.1\r\nHost: x\r\n\r\n";
      (* Read the head (and whatever body came with it). *)
      let buf = Bytes.create 65536 in
      let rec head acc =
        match find acc "\r\n\r\n" with
        | Some i ->
            ( String.sub acc 0 i,
              String.sub acc (i + 4) (String.length acc - i - 4) )
        | None -> (
            match Unix.read s buf 0 (Bytes.length buf) with
            | 0 -> Alcotest.failf "closed before the head: %S" acc
            | n -> head (acc ^ Bytes.sub_string buf 0 n))
      in
      let head, start = head "" in
      Alcotest.(check bool)
        "200 with the old length" true
        (contains head "200 OK"
        && contains head (Printf.sprintf "Content-Length: %d" size));
      Unix.truncate path shrunk;
      let body = start ^ read_to_end s in
      Alcotest.(check bool)
        (Printf.sprintf "cut short (%d of %d bytes)" (String.length body) size)
        true
        (String.length body < size);
      Alcotest.(check bool)
        "a prefix of the file" true
        (String.equal body (String.sub content 0 (String.length body))))

(* A stalled disk delays only the requests that wait on it. A file lease
   makes a real open(2) wait: while a Python process holds a write lease on
   slow.bin, opening it for reading blocks until the holder lets go (or the
   kernel's 45 s lease-break time). The server must keep answering other
   requests meanwhile, and serve slow.bin in full once the lease goes. *)
let py_lease_holder =
  {|
import fcntl, os, signal, sys, time
broken = []
signal.signal(signal.SIGIO, lambda *_: broken.append(1))
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
print("leased", flush=True)
while not broken:
    time.sleep(0.005)
print("broken", flush=True)
sys.stdin.readline()
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
os.close(fd)
print("released", flush=True)
|}

let stalled_open site () =
  let slow_size = 100_000 in
  let slow_content = String.init slow_size (fun i -> Char.chr (i land 127)) in
  let path = Filename.concat (Filename.dirname site.big) "slow.bin" in
  write_file path slow_content;
  let to_holder_r, to_holder_w = Unix.pipe ~cloexec:true ()
  and from_holder_r, from_holder_w = Unix.pipe ~cloexec:true () in
  let holder =
    Unix.create_process "python3"
      [| "python3"; "-c"; py_lease_holder; path |]
      to_holder_r from_holder_w Unix.stderr
  in
  Unix.close to_holder_r;
  Unix.close from_holder_w;
  let from_holder = Unix.in_channel_of_descr from_holder_r in
  let expect line =
    match In_channel.input_line from_holder with
    | Some l when l = line -> ()
    | Some l -> Alcotest.failf "lease holder said %S, not %S" l line
    | None -> Alcotest.failf "lease holder ended before %S" line
  in
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () ->
      Unix.close s;
      (try Unix.kill holder Sys.sigkill with Unix.Unix_error _ -> ());
      ignore (waitpid holder);
      In_channel.close from_holder;
      (try Unix.close to_holder_w with Unix.Unix_error _ -> ());
      Sys.remove path)
    (fun () ->
      expect "leased";
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, site.port));
      send s "GET /slow.bin HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
      (* The server's open of slow.bin now waits for the lease. *)
      expect "broken";
      let out, _ = curl [ "--max-time"; "10"; site.url ^ "/hello.txt" ] in
      Alcotest.(check string) "another file, meanwhile" "hello, world\n" out;
      ignore (Unix.write_substring to_holder_w "release\n" 0 8);
      expect "released";
      let response = read_to_end s in
      Alcotest.(check bool)
        "slow.bin: 200 once the lease is gone" true
        (contains response "200 OK");
      Alcotest.(check bool)
        "slow.bin: in full" true
        (String.ends_with ~suffix:slow_content response))

let curl_escapes site () =
  List.iter
    (fun path ->
      let out, _ =
        curl
          [
            "--path-as-is";
            "--write-out";
            "%{http_code}";
            "-o";
            "/dev/null";
            site.url ^ path;
          ]
      in
      Alcotest.(check string) path "400" out)
    [
      "/../etc/passwd";
      "/%2e%2e/etc/passwd";
      "/sub/..%2f..%2fetc/passwd";
      "/a%00";
    ]

(* {1 Python's http.client} *)

let py_keep_alive =
  {|
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
socks = set()
for path in ["/hello.txt", "/big.bin", "/fib/15", "/hello.txt"]:
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    socks.add(id(c.sock))
    print(r.status, len(body), r.will_close)
print("sockets", len(socks))
|}

let python_keep_alive site () =
  let out, _ = python py_keep_alive [ string_of_int site.port ] in
  Alcotest.(check string)
    "one connection for all"
    "200 13 False\n200 200000 False\n200 4 False\n200 13 False\nsockets 1\n" out

let curl_redirect_injection site () =
  let out, _ =
    curl
      [
        "--include";
        site.url ^ "/go?to=%2Fok";
        site.url ^ "/go?to=%2F%0d%0aSet-Cookie:%20session=attacker";
      ]
  in
  match Wire.parse out with
  | [ ok; refused ], "" ->
      Alcotest.(check (list int))
        "statuses" [ 301; 500 ]
        [ ok.status; refused.status ];
      Alcotest.(check (option string))
        "location" (Some "/ok")
        (Wire.header ok "location");
      Alcotest.(check bool)
        "no injected field" false
        (contains out "Set-Cookie")
  | _ -> Alcotest.failf "unexpected: %S" out

let py_invalid_status =
  {|
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
for path in ["/status/42", "/status/1000", "/hello.txt"]:
    c.request("GET", path)
    r = c.getresponse()
    print(r.status, len(r.read()))
|}

let python_invalid_status site () =
  let out, _ = python py_invalid_status [ string_of_int site.port ] in
  Alcotest.(check string)
    "a complete 500 each, on the same connection" "500 26\n500 26\n200 13\n" out

let py_chunked =
  {|
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("POST", "/reverse", body=iter([b"hello ", b"chunked ", b"world"]), encode_chunked=True)
r = c.getresponse()
print(r.status, r.read().decode())
c.request("GET", "/hello.txt", headers={"Range": "bytes=0-4"})
r = c.getresponse()
print(r.status, r.getheader("Content-Range"), r.read().decode())
|}

let python_chunked site () =
  let out, _ = python py_chunked [ string_of_int site.port ] in
  Alcotest.(check string)
    "reversed, then a range on the same connection"
    "200 dlrow deknuhc olleh\n206 bytes 0-4/13 hello\n" out

let py_continue =
  {|
import http.client, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"POST /reverse HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
interim = b""
while not interim.endswith(b"\r\n\r\n"):
    interim += s.recv(1)
print(interim.split(b"\r\n")[0].decode())
s.sendall(b"hello")
r = http.client.HTTPResponse(s)
r.begin()
print(r.status, r.read().decode())
|}

let python_continue site () =
  let out, _ = python py_continue [ string_of_int site.port ] in
  Alcotest.(check string)
    "100 before the body is sent" "HTTP/1.1 100 Continue\n200 olleh\n" out

let py_conditional =
  {|
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
c.request("GET", "/hello.txt")
r = c.getresponse(); r.read()
lm = r.getheader("Last-Modified")
c.request("GET", "/hello.txt", headers={"If-Modified-Since": lm})
r = c.getresponse()
print(r.status, repr(r.read()))
c.request("HEAD", "/big.bin")
r = c.getresponse()
print(r.status, r.getheader("Content-Length"), repr(r.read()))
|}

let python_conditional site () =
  let out, _ = python py_conditional [ string_of_int site.port ] in
  Alcotest.(check string) "304 then HEAD" "304 b''\n200 200000 b''\n" out

(* {1 Raw sockets} *)

let request ?(close = false) path =
  Printf.sprintf "GET %s HTTP/1.1\r\nHost: x\r\n%s\r\n" path
    (if close then "Connection: close\r\n" else "")

let raw_pipelining site () =
  let out =
    raw site.port
      (request "/fib/5" ^ request "/hello.txt" ^ request ~close:true "/fib/6")
  in
  let rs, rest = Wire.parse out in
  Alcotest.(check string) "nothing left" "" rest;
  Alcotest.(check (list string))
    "three answers in order"
    [ "5\n"; "hello, world\n"; "8\n" ]
    (List.map (fun (r : Wire.response) -> r.body) rs)

let raw_errors site () =
  let rs, _ =
    Wire.parse
      (raw site.port
         ("GET /hello.txt HTTP/1.1\r\n\r\n"
        ^ "BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n" ^ request "/boom"
         ^ request ~close:true "/hello.txt"))
  in
  Alcotest.(check (list int))
    "400, 501, 500, and still serving" [ 400; 501; 500; 200 ] (statuses rs);
  let rs, _ =
    Wire.parse
      (raw site.port
         ("POST /reverse HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n"
        ^ String.make 10000 'x'))
  in
  Alcotest.(check (list int)) "413" [ 413 ] (statuses rs);
  Alcotest.(check (option string))
    "and close" (Some "close")
    (Wire.header (List.hd rs) "connection");
  let rs, _ = Wire.parse (raw site.port "GET / HTTP/2.0\r\nHost: x\r\n\r\n") in
  Alcotest.(check (list int)) "505" [ 505 ] (statuses rs)

(* The requirements of RFC 9112 / RFC 9110 that the server once missed, on a
   real socket. *)
let raw_request_validation site () =
  let rs, _ =
    Wire.parse
      (raw site.port
         ("GET /hello.txt HTTP/1.1\r\nHost: user@x\r\n\r\n"
        ^ "GET /hello.txt HTTP/1.1\r\nHost: x y\r\n\r\n"
         ^ request ~close:true "/hello.txt"))
  in
  Alcotest.(check (list int))
    "an invalid Host is 400, and the connection goes on" [ 400; 400; 200 ]
    (statuses rs);
  let rs, _ =
    Wire.parse
      (raw site.port
         "POST /reverse HTTP/1.1\r\n\
          Host: x\r\n\
          Transfer-Encoding: chunked, gzip\r\n\
          \r\n\
          3\r\n\
          abc\r\n\
          0\r\n\
          \r\n")
  in
  Alcotest.(check (list int)) "chunked not final: 400" [ 400 ] (statuses rs);
  Alcotest.(check (option string))
    "and close" (Some "close")
    (Wire.header (List.hd rs) "connection");
  let rs, _ =
    Wire.parse ~heads:[ 0 ]
      (raw site.port
         "HEAD /hello.txt HTTP/1.1\r\n\
          Host: x\r\n\
          Range: bytes=0-4\r\n\
          Connection: close\r\n\
          \r\n")
  in
  Alcotest.(check (list int)) "HEAD ignores Range" [ 200 ] (statuses rs)

(* {1 The braid binary} *)

let binary = "../../bin/main.exe"

let binary_serves () =
  let root = make_site () in
  let out = Filename.temp_file "braid-serve" ".out" in
  let out_fd = Unix.openfile out [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let null = Unix.openfile "/dev/null" [ O_RDWR ] 0 in
  let pid =
    Unix.create_process binary
      [|
        binary;
        "serve";
        "--port";
        "0";
        "--domains";
        "2";
        "--demo";
        "--root";
        root;
      |]
      null out_fd null
  in
  List.iter Unix.close [ out_fd; null ];
  Fun.protect
    ~finally:(fun () ->
      (try Unix.kill pid Sys.sigterm with Unix.Unix_error _ -> ());
      ignore (waitpid pid);
      Sys.remove out;
      ignore (Sys.command ("rm -rf " ^ Filename.quote root)))
    (fun () ->
      (* The first line names the port; wait for it without a deadline of
         our own (the watchdog bounds the test). *)
      let rec banner () =
        match String.index_opt (read_file out) '\n' with
        | Some i -> String.sub (read_file out) 0 i
        | None ->
            Unix.sleepf 0.01;
            banner ()
      in
      let line = banner () in
      let url =
        match String.split_on_char ' ' line with
        | _ :: _ :: url :: _ -> String.sub url 0 (String.length url - 1)
        | _ -> Alcotest.failf "banner: %S" line
      in
      Alcotest.(check bool) "two loops" true (contains line "2 loops");
      for _ = 1 to 10 do
        Alcotest.(check string)
          "static" "hello, world\n"
          (fst (curl [ url ^ "/hello.txt" ]))
      done;
      Alcotest.(check string) "demo" "55\n" (fst (curl [ url ^ "/fib/10" ])))

let binary_help () =
  let out, _ = run_process binary [ "serve"; "--help=plain" ] in
  List.iter
    (fun opt -> Alcotest.(check bool) opt true (contains out opt))
    [ "--port"; "--root"; "--domains"; "--demo" ]

let () =
  Test_support.Watchdog.start ~seconds:240. "test_integration";
  with_server @@ fun site ->
  Alcotest.run "server integration"
    [
      ( "curl",
        [
          Alcotest.test_case "static file" `Quick (curl_static site);
          Alcotest.test_case "keep-alive" `Quick (curl_keep_alive site);
          Alcotest.test_case "chunked upload" `Quick (curl_chunked_upload site);
          Alcotest.test_case "100-continue" `Quick (curl_continue site);
          Alcotest.test_case "304" `Quick (curl_304 site);
          Alcotest.test_case "precompressed variant" `Quick
            (curl_precompressed site);
          Alcotest.test_case "range" `Quick (curl_range site);
          Alcotest.test_case "HEAD, demo, stream, redirect" `Quick
            (curl_head_and_demo site);
          Alcotest.test_case "3 MiB by sendfile, range, HEAD" `Quick
            (curl_sendfile site);
          Alcotest.test_case "a file shrinking while sent" `Quick
            (shrinking_file site);
          Alcotest.test_case "a stalled open delays no one else" `Quick
            (stalled_open site);
          Alcotest.test_case "escapes" `Quick (curl_escapes site);
          Alcotest.test_case "redirect injection" `Quick
            (curl_redirect_injection site);
        ] );
      ( "python",
        [
          Alcotest.test_case "keep-alive" `Quick (python_keep_alive site);
          Alcotest.test_case "chunked upload" `Quick (python_chunked site);
          Alcotest.test_case "100-continue" `Quick (python_continue site);
          Alcotest.test_case "304 and HEAD" `Quick (python_conditional site);
          Alcotest.test_case "invalid status" `Quick
            (python_invalid_status site);
        ] );
      ( "raw sockets",
        [
          Alcotest.test_case "pipelining" `Quick (raw_pipelining site);
          Alcotest.test_case "errors" `Quick (raw_errors site);
          Alcotest.test_case "request validation" `Quick
            (raw_request_validation site);
        ] );
      ( "braid binary",
        [
          Alcotest.test_case "serve --domains 2" `Quick binary_serves;
          Alcotest.test_case "--help" `Quick binary_help;
        ] );
    ]
