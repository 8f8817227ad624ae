(* WebSocket sessions over an in-memory upgraded connection (scripted client
   bytes in, the server's frames out). The codec's own tests (the accept key,
   frames, masking, UTF-8) are in test/http/test_websocket_codec.ml. *)

open Braid_web
module Ws = Websocket
module Frame = Braid_http.Websocket_codec.Frame

(* {1 Sessions} *)

let mask = "\x0f\xf0\x55\xaa"

let client ?(fin = true) ?(rsv = 0) op payload =
  Frame.serialize ~mask ~fin ~rsv op payload

let close_frame code reason =
  let b = Bytes.create 2 in
  Bytes.set_uint16_be b 0 code;
  client Close (Bytes.to_string b ^ reason)

(* The server's frames, parsed: (opcode, payload). *)
let frames_of s =
  let b = Bytes.of_string s in
  let rec go off acc =
    if off >= String.length s then List.rev acc
    else
      match Frame.parse_header b off (String.length s - off) with
      | Header (h, size) ->
          if h.mask <> None then Alcotest.fail "a masked server frame";
          go
            (off + size + h.length)
            ((h.opcode, String.sub s (off + size) h.length) :: acc)
      | _ -> Alcotest.failf "bad server output %S" s
  in
  go 0 []

let close_code payload =
  if String.length payload >= 2 then String.get_uint16_be payload 0 else 1005

(* Runs [f] on a WebSocket over [input] (given 7 bytes per read, the first
   [buffered] bytes as read before the upgrade); returns what [f] returned
   and the server's frames. *)
let session ?(limits = { Ws.default_limits with idle_timeout = None })
    ?(buffered = 0) input f =
  let pos = ref buffered and out = Buffer.create 256 in
  let read buf off len =
    let n = min (min len 7) (String.length input - !pos) in
    Bytes.blit_string input !pos buf off n;
    pos := !pos + n;
    n
  in
  let write buf off len = Buffer.add_subbytes out buf off len in
  let up =
    Upgraded.make ~buffered:(String.sub input 0 buffered) ~read ~write ()
  in
  let ws = Ws.of_upgraded ~limits up in
  let v = f ws in
  (v, frames_of (Buffer.contents out))

let message =
  Alcotest.testable
    (fun ppf -> function
      | `Text s -> Format.fprintf ppf "`Text %S" s
      | `Binary s -> Format.fprintf ppf "`Binary %S" s
      | `Close (c, r) -> Format.fprintf ppf "`Close (%d, %S)" c r)
    ( = )

let receive_all ws =
  let rec go acc =
    match Ws.receive ws with
    | `Close _ as c -> List.rev (c :: acc)
    | m -> go (m :: acc)
  in
  go []

let fragments_and_ping () =
  let input =
    client ~fin:false Text "Hel"
    ^ client Ping "are you there"
    ^ client ~fin:false Continuation "lo, \xe2\x82"
    ^ client Continuation "\xac!"
    ^ client Binary "\x00\x01\x02"
    ^ client Pong "ignored" ^ close_frame 1000 "bye"
  in
  let got, frames = session ~buffered:5 input receive_all in
  Alcotest.(check (list message))
    "messages"
    [
      `Text "Hello, \xe2\x82\xac!"; `Binary "\x00\x01\x02"; `Close (1000, "bye");
    ]
    got;
  match frames with
  | [ (Pong, "are you there"); (Close, c) ] ->
      Alcotest.(check int) "close echoed" 1000 (close_code c)
  | _ -> Alcotest.failf "server frames: %d" (List.length frames)

(* A client frame that breaks a rule: the close code sent and returned. *)
let fails ?limits name code input =
  let got, frames = session ?limits input receive_all in
  (match List.rev got with
  | `Close (c, _) :: _ -> Alcotest.(check int) (name ^ ": returned") code c
  | _ -> Alcotest.fail name);
  match List.rev frames with
  | (Close, payload) :: _ ->
      Alcotest.(check int) (name ^ ": sent") code (close_code payload)
  | _ -> Alcotest.failf "%s: no close frame" name

let bad_frames () =
  fails "unmasked" 1002 (Frame.serialize Text "hi");
  fails "reserved bit" 1002 (client ~rsv:4 Text "hi");
  fails "opcode 3" 1002 (client (Reserved 3) "hi");
  fails "opcode 11" 1002 (client (Reserved 11) "");
  fails "fragmented ping" 1002 (client ~fin:false Ping "x");
  fails "ping of 126 bytes" 1002 (client Ping (String.make 126 'x'));
  fails "continuation of nothing" 1002 (client Continuation "x");
  fails "text inside text" 1002 (client ~fin:false Text "a" ^ client Text "b");
  fails "close of one byte" 1002 (client Close "x");
  fails "close code 1005" 1002 (close_frame 1005 "");
  fails "close code 999" 1002 (close_frame 999 "");
  fails "close reason not UTF-8" 1007 (close_frame 1000 "\xff");
  fails "invalid UTF-8" 1007 (client Text "a\xc0\xafb");
  fails "invalid UTF-8 across fragments" 1007
    (client ~fin:false Text "\xed" ^ client Continuation "\xa0\x80");
  fails "truncated UTF-8 at the end" 1007 (client Text "\xe2\x82");
  let limits = { Ws.max_frame = 200; max_message = 300; idle_timeout = None } in
  fails ~limits "frame too big" 1009 (client Binary (String.make 201 'x'));
  fails ~limits "message too big" 1009
    (client ~fin:false Binary (String.make 200 'x')
    ^ client Continuation (String.make 101 'x'));
  (* Text before the bad frame is still delivered. *)
  let got, _ =
    session (client Text "ok" ^ Frame.serialize Text "no") receive_all
  in
  Alcotest.(check (list message))
    "before the bad frame"
    [ `Text "ok"; `Close (1002, "unmasked frame") ]
    got

let end_of_stream () =
  let got, frames = session (client Text "x") receive_all in
  Alcotest.(check (list message))
    "abnormal"
    [ `Text "x"; `Close (1006, "") ]
    got;
  Alcotest.(check int) "nothing sent" 0 (List.length frames);
  (* Still closed afterwards; senders raise. *)
  let _, frames =
    session (close_frame 1001 "") (fun ws ->
        ignore (Ws.receive ws);
        Alcotest.(check message) "again" (`Close (1001, "")) (Ws.receive ws);
        Alcotest.check_raises "send after close" Ws.Closed (fun () ->
            Ws.send_text ws "late"))
  in
  Alcotest.(check int) "one close frame" 1 (List.length frames)

let server_close () =
  (* The server closes; messages are dropped until the client's close. *)
  let got, frames =
    session
      (client Text "dropped" ^ close_frame 1000 "")
      (fun ws ->
        Ws.send_text ws "hi";
        Ws.close ~code:4000 ~reason:"done" ws;
        receive_all ws)
  in
  Alcotest.(check (list message)) "only the close" [ `Close (1000, "") ] got;
  (match frames with
  | [ (Text, "hi"); (Close, c) ] ->
      Alcotest.(check int) "code" 4000 (close_code c);
      Alcotest.(check string)
        "reason" "done"
        (String.sub c 2 (String.length c - 2))
  | _ -> Alcotest.fail "frames");
  let invalid f =
    match f () with () -> false | exception Invalid_argument _ -> true
  in
  let _ =
    session "" (fun ws ->
        Alcotest.(check bool)
          "code 1005 refused" true
          (invalid (fun () -> Ws.close ~code:1005 ws));
        Alcotest.(check bool)
          "text not UTF-8 refused" true
          (invalid (fun () -> Ws.send_text ws "\xff"));
        Alcotest.(check bool)
          "long reason refused" true
          (invalid (fun () -> Ws.close ~reason:(String.make 124 'x') ws)))
  in
  ()

(* {1 Abort} *)

(* A connection whose reads never return (a client that sends nothing) and
   whose writes block once [room] bytes are taken (a client that stopped
   reading), under the FIFO scheduler; [f sw ws out] runs in a fiber, with a
   switch for the fibers it forks. *)
let stalled ~room f =
  let out = Buffer.create 256 in
  let read _ _ _ = Braid_sync.Promise.await (Braid_sync.Promise.create ()) in
  let write buf off len =
    let fits = min len (room - Buffer.length out) in
    Buffer.add_subbytes out buf off fits;
    if fits < len then Braid_sync.Promise.await (Braid_sync.Promise.create ())
  in
  let up = Upgraded.make ~read ~write () in
  let ws =
    Ws.of_upgraded ~limits:{ Ws.default_limits with idle_timeout = None } up
  in
  (* On a switch: a failed check cancels the fibers still blocked. *)
  Braid_fifo.run (fun () -> Braid.Switch.run (fun sw -> f sw ws out))

(* Issue 39: a slow client is dropped at once, from another domain, though
   a fiber is blocked writing to it and another receiving from it. *)
let abort_blocked () =
  stalled ~room:100 (fun sw ws out ->
      let sender =
        Braid.Switch.fork sw (fun () ->
            match Ws.send_text ws (String.make 1000 'x') with
            | () -> "sent"
            | exception Ws.Closed -> "Closed")
      in
      let receiver = Braid.Switch.fork sw (fun () -> Ws.receive ws) in
      Braid.Fiber.yield ();
      (* Both blocked now. *)
      Domain.join
        (Domain.spawn (fun () ->
             Ws.abort ~code:1013 ~reason:"too slow" ws;
             Ws.abort ~code:1000 ws (* a second call does nothing *)));
      (* The wake-ups are queued: a few turns of the scheduler run them. *)
      for _ = 1 to 10 do
        Braid.Fiber.yield ()
      done;
      Alcotest.(check bool) "the sender woke" true (Braid.Fiber.is_done sender);
      Alcotest.(check bool)
        "the receiver woke" true
        (Braid.Fiber.is_done receiver);
      Alcotest.(check string)
        "the blocked sender" "Closed" (Braid.Fiber.join sender);
      Alcotest.(check message)
        "the blocked receiver"
        (`Close (1013, "too slow"))
        (Braid.Fiber.join receiver);
      Alcotest.(check message)
        "and from then on"
        (`Close (1013, "too slow"))
        (Ws.receive ws);
      Alcotest.check_raises "a later send" Ws.Closed (fun () ->
          Ws.send_text ws "late");
      (* The frame was cut after 100 bytes: no close frame could follow. *)
      Alcotest.(check int) "nothing after the cut" 100 (Buffer.length out))

(* With no write in progress, the receiver sends the close frame. *)
let abort_idle () =
  stalled ~room:1000 (fun sw ws out ->
      Ws.send_text ws "hi";
      let receiver = Braid.Switch.fork sw (fun () -> Ws.receive ws) in
      Braid.Fiber.yield ();
      Ws.abort ~code:1013 ~reason:"too slow" ws;
      Braid.Fiber.yield ();
      Alcotest.(check bool)
        "the receiver woke" true
        (Braid.Fiber.is_done receiver);
      Alcotest.(check message)
        "the receiver"
        (`Close (1013, "too slow"))
        (Braid.Fiber.join receiver);
      match frames_of (Buffer.contents out) with
      | [ (Text, "hi"); (Close, c) ] ->
          Alcotest.(check int) "code" 1013 (close_code c);
          Alcotest.(check string)
            "reason" "too slow"
            (String.sub c 2 (String.length c - 2))
      | _ -> Alcotest.fail "frames");
  stalled ~room:1000 (fun _ ws _ ->
      Alcotest.check_raises "code 1005 refused"
        (Invalid_argument "Braid_web.Websocket.abort: code 1005") (fun () ->
          Ws.abort ~code:1005 ws))

(* {1 The handshake's Origin} *)

(* Cross-site WebSocket hijacking: a page of another site opens a WebSocket
   with the user's cookies. Browsers send the page's Origin; the default
   refuses one that is not the Host's, and lets clients without one in. *)
let origins () =
  let app ?origins () =
    Router.(
      empty
      |> get "/ws" (fun r ->
             Ws.accept ?origins r (fun ws -> Ws.send_text ws "in")))
  in
  let handshake ?(host = "chat.example:8080") ?origins origin_fields =
    (Braid_server.Testing.call
       ~headers:
         ([
            ("Host", host);
            ("Upgrade", "websocket");
            ("Connection", "Upgrade");
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
            ("Sec-WebSocket-Version", "13");
          ]
         @ List.map (fun o -> ("Origin", o)) origin_fields)
       (app ?origins ()) "/ws")
      .status
  in
  let check name expected actual = Alcotest.(check int) name expected actual in
  check "no Origin (not a browser): accepted" 101 (handshake []);
  check "same origin" 101 (handshake [ "http://chat.example:8080" ]);
  check "same origin, case-insensitive" 101
    (handshake [ "HTTP://Chat.Example:8080" ]);
  check "default ports: https://h and Host h" 101
    (handshake ~host:"chat.example" [ "https://chat.example" ]);
  check "default port spelled out" 101
    (handshake ~host:"chat.example:443" [ "https://chat.example" ]);
  check "IPv6" 101 (handshake ~host:"[::1]:8080" [ "http://[::1]:8080" ]);
  check "cross-origin: 403" 403 (handshake [ "https://evil.example" ]);
  check "another port: 403" 403 (handshake [ "http://chat.example:9090" ]);
  check "a suffix of the host: 403" 403
    (handshake [ "http://evil-chat.example:8080" ]);
  check "a port not in digits: 403" 403
    (handshake ~host:"chat.example:443" [ "https://chat.example:0x1bb" ]);
  check "null: 403" 403 (handshake [ "null" ]);
  check "two Origin fields: 403" 403
    (handshake [ "http://chat.example:8080"; "https://evil.example" ]);
  check "Any: accepted" 101
    (handshake ~origins:Ws.Any [ "https://evil.example" ]);
  let only = Ws.Only [ "https://app.example" ] in
  check "Only, listed" 101 (handshake ~origins:only [ "https://app.example" ]);
  check "Only, the Host's own origin unlisted: 403" 403
    (handshake ~origins:only [ "http://chat.example:8080" ]);
  check "Only, no Origin: accepted" 101 (handshake ~origins:only [])

let () =
  Alcotest.run "websocket"
    [
      ("handshake", [ Alcotest.test_case "Origin" `Quick origins ]);
      ( "sessions",
        [
          Alcotest.test_case "fragments, ping, close" `Quick fragments_and_ping;
          Alcotest.test_case "bad frames" `Quick bad_frames;
          Alcotest.test_case "end of stream" `Quick end_of_stream;
          Alcotest.test_case "server closes" `Quick server_close;
          Alcotest.test_case "abort, writer and reader blocked" `Quick
            abort_blocked;
          Alcotest.test_case "abort, nothing blocked" `Quick abort_idle;
        ] );
    ]
