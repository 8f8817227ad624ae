(* WebSocket against real clients: Python's [websockets] package (echo of
   text, binary, fragmented and large messages, ping, subprotocols, close
   codes, the idle timeout), bad frames sent raw from Python over a plain
   socket (each must close with its code, and the server keeps serving), and
   from OCaml over a raw socket: the connection limit counts an upgraded
   connection, and a graceful shutdown closes it with 1001; and the same echo
   over TLS (wss:). *)

open Braid_server
open Braid_web
open Text_and_process
module Ws = Websocket
module Ws_codec = Braid_http.Websocket_codec

(* {1 The server} *)

let echo ws =
  let rec loop () =
    match Ws.receive ws with
    | `Text s ->
        Ws.send_text ws s;
        loop ()
    | `Binary s ->
        Ws.send_binary ws s;
        loop ()
    | `Close _ -> ()
  in
  loop ()

let limits = { Ws.default_limits with max_frame = 65536; max_message = 65536 }

let router =
  Router.empty
  |> Router.add GET "/hello" (fun _ -> Response.string "hello")
  |> Router.add GET "/echo" (fun r ->
         Ws.accept ~limits
           ~protocols:(fun offered ->
             if List.mem "chat" offered then Some "chat" else None)
           r echo)
  |> Router.add GET "/idle" (fun r ->
         Ws.accept ~limits:{ limits with idle_timeout = Some 0.3 } r (fun ws ->
             ignore (Ws.receive ws)))
  |> Router.add GET "/closer" (fun r ->
         Ws.accept r (fun ws ->
             Ws.send_text ws "bye";
             Ws.close ~code:4001 ~reason:"done" ws;
             ignore (Ws.receive ws)))
  |> Router.add GET "/boom" (fun r ->
         Ws.accept r (fun _ -> failwith "boom (expected by the test)"))

let with_server ?(config = Config.default) f =
  let settings = Real_services.settings ~log_level:Error router in
  let config = { config with listen = Braid_io.Net.tcp "127.0.0.1" 0 } in
  match Server.create ~settings config with
  | Ok server -> serving server (fun port -> f server port)
  | Error msg -> Alcotest.fail msg

(* {1 Python} *)

(* The Python that has [websockets]: the PATH's, or Debian's. *)
let python =
  lazy
    (match
       List.find_opt
         (fun p ->
           Sys.command (Filename.quote p ^ " -c 'import websockets' 2>/dev/null")
           = 0)
         [ "python3"; "/usr/bin/python3" ]
     with
    | Some p -> p
    | None ->
        Alcotest.fail
          "no python3 with the websockets package (Debian: python3-websockets; \
           scripts/setup.sh installs it)")

(* [args] follow the port on the script's command line. *)
let run_python ?(args = []) script port =
  let out = Filename.temp_file "braid-ws" ".out" in
  let command =
    Printf.sprintf "timeout 60 %s -c %s %d %s > %s 2>&1"
      (Filename.quote (Lazy.force python))
      (Filename.quote script) port
      (String.concat " " (List.map Filename.quote args))
      (Filename.quote out)
  in
  let status = Sys.command command in
  let output = read_file out in
  Sys.remove out;
  if status <> 0 then Alcotest.failf "python exited with %d:\n%s" status output;
  output

let lines s = String.split_on_char '\n' (String.trim s)

(* The real client, through its public API only. *)
let py_client =
  {|
import asyncio, sys, urllib.request
import websockets
from websockets.exceptions import ConnectionClosed

port = int(sys.argv[1])
base = "ws://127.0.0.1:%d" % port

async def main():
    async with websockets.connect(base + "/echo", subprotocols=["x", "chat"]) as ws:
        print("protocol", ws.subprotocol)
        await ws.send("h\u00e9llo \u20ac")
        print("text", await ws.recv())
        await ws.send(b"\x00\xff\x10")
        print("binary", (await ws.recv()).hex())
        await ws.send(["frag", "ment", "ed \u00e9"])
        print("fragmented", await ws.recv())
        await ws.send([b"\x01", b"\x02\x03"])
        print("fragmented binary", (await ws.recv()).hex())
        big = "y" * 60000
        await ws.send(big)
        print("large", (await ws.recv()) == big)
        pong = await ws.ping(b"abc")
        await asyncio.wait_for(pong, 10)
        print("pong")
        await ws.close(code=4000, reason="client done")
        print("close echoed", ws.close_code)
    async with websockets.connect(base + "/echo") as ws:
        print("no protocol", ws.subprotocol)
        try:
            await ws.send("z" * 70000)
            await ws.recv()
        except ConnectionClosed as e:
            print("too big", e.rcvd.code)
    async with websockets.connect(base + "/closer") as ws:
        print("closer says", await ws.recv())
        try:
            await ws.recv()
        except ConnectionClosed as e:
            print("server closed", e.rcvd.code, e.rcvd.reason)
    async with websockets.connect(base + "/idle", ping_interval=None) as ws:
        try:
            await asyncio.wait_for(ws.recv(), 10)
        except ConnectionClosed as e:
            print("idle", e.rcvd.code, e.rcvd.reason)
    async with websockets.connect(base + "/boom") as ws:
        try:
            await asyncio.wait_for(ws.recv(), 10)
        except ConnectionClosed as e:
            print("boom", e.rcvd.code)
    print("http", urllib.request.urlopen("http://127.0.0.1:%d/hello" % port).read().decode())

asyncio.run(main())
|}

let python_client () =
  with_server (fun _ port ->
      let out = run_python py_client port in
      Alcotest.(check (list string))
        "the client's view"
        [
          "protocol chat";
          "text h\xc3\xa9llo \xe2\x82\xac";
          "binary 00ff10";
          "fragmented fragmented \xc3\xa9";
          "fragmented binary 010203";
          "large True";
          "pong";
          "close echoed 4000";
          "no protocol None";
          "too big 1009";
          "closer says bye";
          "server closed 4001 done";
          "idle 1001 idle timeout";
          "boom 1011";
          "http hello";
        ]
        (lines out))

(* Bad frames over a plain socket, after a handshake checked with Python's
   own SHA-1 and base64. Each must end with the server's close code, then
   the end of the stream; then the server still serves. *)
let py_raw =
  {|
import base64, hashlib, os, socket, struct, sys, urllib.request

port = int(sys.argv[1])

def frame(opcode, payload, fin=True, mask=True, rsv=0, length=None):
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))

def session(data, path="/echo"):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET %s HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % (path, key)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += s.recv(4096)
    head, buf = buf.split(b"\r\n\r\n", 1)
    expected = base64.b64encode(hashlib.sha1(
        (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
    assert head.startswith(b"HTTP/1.1 101 "), head
    assert ("Sec-WebSocket-Accept: " + expected).encode() in head, head
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    while True:
        try:
            d = s.recv(65536)
        except ConnectionResetError:
            break
        if not d:
            break
        buf += d
    s.close()
    # The server's frames: the last must be its close.
    frames = []
    while buf:
        b1 = buf[1]
        assert b1 & 0x80 == 0, "a masked server frame"
        n = b1 & 0x7f
        off = 2
        if n == 126:
            n = struct.unpack("!H", buf[2:4])[0]; off = 4
        elif n == 127:
            n = struct.unpack("!Q", buf[2:10])[0]; off = 10
        frames.append((buf[0] & 0x0f, buf[off:off + n]))
        buf = buf[off + n:]
    op, payload = frames[-1]
    assert op == 8, frames
    return struct.unpack("!H", payload[:2])[0]

cases = [
    ("unmasked", frame(1, b"hi", mask=False)),
    ("oversize frame", frame(2, b"x" * 70000)),
    ("oversize message", frame(2, b"x" * 40000, fin=False) + frame(0, b"x" * 40000)),
    ("invalid utf-8", frame(1, b"caf\xc3")),
    ("invalid utf-8 across fragments", frame(1, b"\xf0\x9f", fin=False) + frame(0, b"\x41")),
    ("opcode 3", frame(3, b"")),
    ("opcode 15", frame(15, b"x")),
    ("reserved bit", frame(1, b"hi", rsv=2)),
    ("fragmented ping", frame(9, b"p", fin=False)),
    ("long ping", frame(9, b"p" * 126)),
    ("continuation first", frame(0, b"x")),
    ("bad close code", frame(8, struct.pack("!H", 1006))),
    ("declared 2^63", frame(2, b"", length=2**63)),
    ("normal close", frame(1, b"fine") + frame(8, struct.pack("!H", 1000))),
]
for name, data in cases:
    print(name, session(data))
print("http", urllib.request.urlopen("http://127.0.0.1:%d/hello" % port).read().decode())
|}

let python_bad_frames () =
  with_server (fun _ port ->
      let out = run_python py_raw port in
      Alcotest.(check (list string))
        "close codes"
        [
          "unmasked 1002";
          "oversize frame 1009";
          "oversize message 1009";
          "invalid utf-8 1007";
          "invalid utf-8 across fragments 1007";
          "opcode 3 1002";
          "opcode 15 1002";
          "reserved bit 1002";
          "fragmented ping 1002";
          "long ping 1002";
          "continuation first 1002";
          "bad close code 1002";
          "declared 2^63 1002";
          "normal close 1000";
          "http hello";
        ]
        (lines out))

(* {1 Raw sockets from OCaml} *)

let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  s

let recv_some s =
  let b = Bytes.create 65536 in
  match Unix.read s b 0 65536 with
  | n -> Bytes.sub_string b 0 n
  | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) -> "<timeout>"
  | exception Unix.Unix_error (ECONNRESET, _, _) -> ""

(* A handshake; returns the bytes after the 101's head. *)
let handshake ?(extra = "") s path =
  send s
    (Printf.sprintf
       "GET %s HTTP/1.1\r\n\
        Host: t\r\n\
        Upgrade: websocket\r\n\
        Connection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\n\
        %s\r\n"
       path extra);
  let rec head acc =
    match find acc "\r\n\r\n" with
    | Some i ->
        (String.sub acc 0 i, String.sub acc (i + 4) (String.length acc - i - 4))
    | None ->
        let more = recv_some s in
        if more = "" || more = "<timeout>" then Alcotest.failf "no head: %S" acc;
        head (acc ^ more)
  in
  head ""

let client_frame op payload = Ws_codec.Frame.serialize ~mask:"abcd" op payload

let handshake_errors () =
  with_server (fun _ port ->
      let s = connect port in
      let head, rest = handshake s "/echo" in
      Unix.close s;
      Alcotest.(check bool)
        "101" true
        (String.starts_with ~prefix:"HTTP/1.1 101" head);
      Alcotest.(check bool)
        "the RFC's accept key" true
        (contains head "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
      Alcotest.(check bool)
        "Connection: Upgrade" true
        (contains head "Connection: Upgrade");
      Alcotest.(check string) "nothing more" "" rest;
      let answer request =
        let s = connect port in
        send s request;
        let r = read_to_end s in
        Unix.close s;
        r
      in
      let plain =
        answer "GET /echo HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
      in
      Alcotest.(check bool)
        "426 for a plain GET" true
        (String.starts_with ~prefix:"HTTP/1.1 426" plain
        && contains plain "Upgrade: websocket");
      let v8 =
        answer
          "GET /echo HTTP/1.1\r\n\
           Host: t\r\n\
           Upgrade: websocket\r\n\
           Connection: Upgrade, close\r\n\
           Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
           Sec-WebSocket-Version: 8\r\n\
           \r\n"
      in
      Alcotest.(check bool)
        "426 and the version for version 8" true
        (String.starts_with ~prefix:"HTTP/1.1 426" v8
        && contains v8 "Sec-WebSocket-Version: 13");
      let nokey =
        answer
          "GET /echo HTTP/1.1\r\n\
           Host: t\r\n\
           Upgrade: websocket\r\n\
           Connection: Upgrade, close\r\n\
           Sec-WebSocket-Key: short\r\n\
           Sec-WebSocket-Version: 13\r\n\
           \r\n"
      in
      Alcotest.(check bool)
        "400 for a bad key" true
        (String.starts_with ~prefix:"HTTP/1.1 400" nokey);
      (* After the handshake, a frame is echoed. *)
      let s = connect port in
      ignore (handshake s "/echo");
      send s (client_frame Text "after");
      let echoed = recv_some s in
      Alcotest.(check string)
        "echo"
        (Ws_codec.Frame.serialize Text "after")
        echoed;
      Unix.close s)

let pipelined_frame () =
  with_server (fun _ port ->
      (* The head and a first frame in one write. *)
      let s = connect port in
      send s
        ("GET /echo HTTP/1.1\r\n\
          Host: t\r\n\
          Upgrade: websocket\r\n\
          Connection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
          Sec-WebSocket-Version: 13\r\n\
          \r\n" ^ client_frame Text "early");
      let rec until_frame acc =
        match find acc "\r\n\r\n" with
        | Some i when String.length acc > i + 4 ->
            String.sub acc (i + 4) (String.length acc - i - 4)
        | _ -> until_frame (acc ^ recv_some s)
      in
      Alcotest.(check string)
        "the frame read with the head is echoed"
        (Ws_codec.Frame.serialize Text "early")
        (until_frame "");
      Unix.close s)

(* The upgraded connection holds the only slot: a second client waits
   until it closes. *)
let connection_limit () =
  let config = { Config.default with max_connections = 1 } in
  with_server ~config (fun server port ->
      let ws = connect port in
      ignore (handshake ws "/echo");
      send ws (client_frame Text "ping?");
      ignore (recv_some ws);
      Alcotest.(check int) "one connection" 1 (Server.connections server);
      let other = connect port in
      send other "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
      Unix.setsockopt_float other SO_RCVTIMEO 0.5;
      Alcotest.(check string)
        "not served while the WebSocket holds the slot (not evicted as idle)"
        "<timeout>" (recv_some other);
      Unix.setsockopt_float other SO_RCVTIMEO 10.;
      send ws (client_frame Close "\x03\xe8");
      ignore (read_to_end ws);
      Unix.close ws;
      let answer = read_to_end other in
      Unix.close other;
      Alcotest.(check bool)
        "served once it closed" true
        (String.starts_with ~prefix:"HTTP/1.1 200" answer))

(* A graceful shutdown: the WebSocket gets 1001 and the server's [run]
   returns well before the deadline. *)
let graceful_shutdown () =
  with_server (fun server port ->
      let ws = connect port in
      ignore (handshake ws "/echo");
      send ws (client_frame Text "x");
      ignore (recv_some ws);
      let t0 = Unix.gettimeofday () in
      Server.shutdown server ~deadline:20.;
      let rest = read_to_end ws in
      Unix.close ws;
      Alcotest.(check string)
        "close 1001"
        (Ws_codec.Frame.serialize Close "\x03\xe9server shutting down")
        rest;
      let rec wait () =
        if Server.connections server > 0 && Unix.gettimeofday () -. t0 < 10.
        then (
          Unix.sleepf 0.02;
          wait ())
      in
      wait ();
      Alcotest.(check int) "no connection left" 0 (Server.connections server);
      Alcotest.(check bool)
        "long before the deadline" true
        (Unix.gettimeofday () -. t0 < 10.))

(* {1 Over TLS} *)

let py_wss =
  {|
import asyncio, ssl, sys, websockets
async def main(port, cafile):
    context = ssl.create_default_context(cafile=cafile)
    context.check_hostname = False
    async with websockets.connect("wss://127.0.0.1:%d/echo" % port, ssl=context,
                                  max_size=2**20) as ws:
        await ws.send("h\u00e9llo")
        print("text", await ws.recv())
        big = bytes(range(256)) * 200
        await ws.send(big)
        print("large", (await ws.recv()) == big)
        await ws.close(code=1000)
        print("closed", ws.close_code)
asyncio.run(main(int(sys.argv[1]), sys.argv[2]))
|}

(* The same WebSocket routes over HTTPS: an upgraded connection reads and
   writes through TLS. *)
let python_wss () =
  let dir = Filename.temp_dir "braid-wss" "" in
  let cert, key = self_signed dir in
  let config =
    {
      Config.default with
      tls =
        Some
          {
            address = Braid_io.Net.tcp "127.0.0.1" 0;
            certificates = [ { chain = cert; key } ];
            redirect = false;
          };
    }
  in
  with_server ~config (fun server _ ->
      let port =
        match Server.https_address server with
        | Some (ADDR_INET (_, port)) -> port
        | _ -> Alcotest.fail "no HTTPS address"
      in
      let output =
        Fun.protect
          ~finally:(fun () ->
            ignore (Sys.command ("rm -rf " ^ Filename.quote dir)))
          (fun () -> run_python ~args:[ cert ] py_wss port)
      in
      Alcotest.(check (list string))
        "the client's view"
        [ "text h\xc3\xa9llo"; "large True"; "closed 1000" ]
        (lines output))

let () =
  Alcotest.run "websocket client"
    [
      ( "python websockets",
        [
          Alcotest.test_case "echo, fragments, ping, close codes" `Quick
            python_client;
          Alcotest.test_case "bad frames, then HTTP" `Quick python_bad_frames;
          Alcotest.test_case "echo over TLS (wss:)" `Quick python_wss;
        ] );
      ( "raw sockets",
        [
          Alcotest.test_case "handshake and its errors" `Quick handshake_errors;
          Alcotest.test_case "a frame read with the head" `Quick pipelined_frame;
          Alcotest.test_case "counted by the connection limit" `Quick
            connection_limit;
          Alcotest.test_case "graceful shutdown closes with 1001" `Quick
            graceful_shutdown;
        ] );
    ]
