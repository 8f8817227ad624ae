(* The chat room of examples/chat against real clients: a member whose
   outbox overflows is dropped at once (Websocket.abort), not when its
   blocked write reaches the send timeout, and the room keeps serving the
   others meanwhile (issue 39).

   The slow member is a raw socket from Python with a small receive buffer
   that does the handshake and then never reads: its server-side writer
   blocks on the full socket and its outbox (8 messages) fills. The fast
   member is Python's websockets client, which posts 16 KiB messages one
   at a time, each awaited back (the room echoes to the sender too). The
   test counts the members whose callback returned: once both are in
   (Python creates [joined]), one must end while the fast one posts.
   The send timeout is 600 s, so before the fix the count stays at 2 and
   the test fails at its own 60 s bound. Then (the test creates [stop]),
   the fast member posts once more and must get it back, and the slow
   socket, read at last, must end (end of stream or reset). *)

open Braid_server
open Braid_web
open Text_and_process

let script =
  {|
import asyncio, os, socket, sys, base64
import websockets

port, dir = int(sys.argv[1]), sys.argv[2]

def slow_member():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /chat HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n" % key).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise SystemExit("slow: no answer")
        head += b
    assert head.startswith(b"HTTP/1.1 101"), head
    return s

async def main():
    slow = slow_member()
    async with websockets.connect("ws://127.0.0.1:%d/chat" % port,
                                  max_size=None) as fast:
        open(os.path.join(dir, "joined"), "w").close()
        stop = os.path.join(dir, "stop")
        sent = 0
        while not os.path.exists(stop):
            if sent == 4000:
                print("fast: 4000 messages and no stop")
                return
            text = "%06d " % sent + "x" * 16384
            await fast.send(text)
            while True:
                got = await asyncio.wait_for(fast.recv(), 30)
                if got == text:
                    break
            sent += 1
            if sent > 1000:
                # The drop is long past unless it waits for the send
                # timeout: no need to hurry (4000 take at least 15 s).
                await asyncio.sleep(0.005)
        await fast.send("after")
        while (await asyncio.wait_for(fast.recv(), 30)) != "after":
            pass
        print("fast: got its message after the drop")
    slow.settimeout(30)
    total = 0
    try:
        while True:
            b = slow.recv(65536)
            if not b:
                print("slow: end of stream")
                break
            total += len(b)
    except ConnectionResetError:
        print("slow: reset")
    except socket.timeout:
        print("slow: still open after 30 s")

asyncio.run(main())
|}

let outbox = 8

(* [ended] counts the members whose callback has returned: the server
   closes their connection then. *)
let router room ended =
  Router.empty
  |> Router.add GET "/chat" (fun r ->
         Websocket.accept
           ~limits:{ Websocket.default_limits with max_message = 65536 } r
           (fun ws ->
             Fun.protect
               ~finally:(fun () -> Atomic.incr ended)
               (fun () -> Chat_room.Room.member room ws)))

let python =
  if Sys.command "python3 -c 'import websockets' 2>/dev/null" = 0 then "python3"
  else "/usr/bin/python3"

(* Polls every 10 ms for at most [seconds]. *)
let wait_for ~seconds what cond =
  let deadline = Unix.gettimeofday () +. seconds in
  let rec go () =
    if cond () then ()
    else if Unix.gettimeofday () > deadline then Alcotest.failf "never: %s" what
    else (
      Unix.sleepf 0.01;
      go ())
  in
  go ()

let slow_member_dropped () =
  let room = Chat_room.Room.create ~outbox_size:outbox in
  let ended = Atomic.make 0 in
  let settings = Real_services.settings ~log_level:Error (router room ended) in
  let config =
    {
      Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" 0;
      domains = 2;
      timeouts = { Config.default.timeouts with send = 600. };
    }
  in
  let server =
    match Server.create ~settings config with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  let dir = Filename.temp_dir "braid-chat" "" in
  let out = dir ^ "/out" in
  serving server @@ fun port ->
  let out_fd = Unix.openfile out [ O_WRONLY; O_CREAT; O_TRUNC ] 0o600 in
  let null = Unix.openfile "/dev/null" [ O_RDONLY ] 0 in
  let pid =
    spawn_alone
      [| "timeout"; "90"; python; "-c"; script; string_of_int port; dir |]
      ~stdin:null ~stdout:out_fd ~stderr:out_fd
  in
  Unix.close out_fd;
  Unix.close null;
  let finish () =
    match waitpid pid with
    | WEXITED 0 -> read_file out
    | _ -> Alcotest.failf "python failed:\n%s" (read_file out)
  in
  let exited () =
    match Unix.waitpid [ WNOHANG ] pid with
    | 0, _ -> false
    | _ -> Alcotest.failf "python exited early:\n%s" (read_file out)
  in
  wait_for ~seconds:30. "both members in" (fun () ->
      Sys.file_exists (dir ^ "/joined") || exited ());
  wait_for ~seconds:60. "the slow member dropped while the fast one posts"
    (fun () -> Atomic.get ended = 1 || exited ());
  write_file (dir ^ "/stop") "";
  let output = finish () in
  if not (contains output "fast: got its message after the drop") then
    Alcotest.failf "the room stopped serving:\n%s" output;
  if not (contains output "slow: end of stream" || contains output "slow: reset")
  then Alcotest.failf "the slow socket did not end:\n%s" output

let () =
  Alcotest.run "chat"
    [
      ( "outbox",
        [
          Alcotest.test_case "a slow member is dropped, the room goes on" `Quick
            slow_member_dropped;
        ] );
    ]
