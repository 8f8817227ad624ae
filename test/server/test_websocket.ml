(* WebSocket units: the accept key, frames, masking, UTF-8, and whole
   sessions over an in-memory upgraded connection (scripted client bytes in,
   the server's frames out). *)

open Braid_web
module Ws = Websocket
module Frame = Braid_http.Websocket_codec.Frame

let hex s =
  String.concat ""
    (List.map
       (fun c -> Printf.sprintf "%02x" (Char.code c))
       (List.of_seq (String.to_seq s)))

let bytes_of l = String.init (List.length l) (fun i -> Char.chr (List.nth l i))

(* {1 Handshake key and SHA-1} *)

let accept_key () =
  (* RFC 6455 §1.3. *)
  Alcotest.(check string)
    "RFC 6455 example" "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    (Braid_http.Websocket_codec.accept_key "dGhlIHNhbXBsZSBub25jZQ==");
  (* RFC 3174 §7.3, the SHA-1 it rests on. *)
  Alcotest.(check string)
    "abc" "a9993e364706816aba3e25717850c26c9cd0d89d"
    (hex (Sha1.to_bin (Sha1.string "abc")));
  Alcotest.(check string)
    "two blocks" "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
    (hex
       (Sha1.to_bin
          (Sha1.string
             "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")));
  Alcotest.(check string)
    "a million a" "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
    (hex (Sha1.to_bin (Sha1.string (String.make 1_000_000 'a'))))

(* {1 Frames} *)

(* RFC 6455 §5.7's examples. *)
let rfc_examples () =
  let check name expected got =
    Alcotest.(check string) name (hex expected) (hex got)
  in
  check "unmasked Hello"
    (bytes_of [ 0x81; 0x05; 0x48; 0x65; 0x6c; 0x6c; 0x6f ])
    (Frame.serialize Text "Hello");
  check "masked Hello"
    (bytes_of
       [ 0x81; 0x85; 0x37; 0xfa; 0x21; 0x3d; 0x7f; 0x9f; 0x4d; 0x51; 0x58 ])
    (Frame.serialize ~mask:(bytes_of [ 0x37; 0xfa; 0x21; 0x3d ]) Text "Hello");
  check "first fragment"
    (bytes_of [ 0x01; 0x03; 0x48; 0x65; 0x6c ])
    (Frame.serialize ~fin:false Text "Hel");
  check "last fragment"
    (bytes_of [ 0x80; 0x02; 0x6c; 0x6f ])
    (Frame.serialize Continuation "lo");
  check "ping"
    (bytes_of [ 0x89; 0x05; 0x48; 0x65; 0x6c; 0x6c; 0x6f ])
    (Frame.serialize Ping "Hello");
  check "256 bytes: 16-bit length"
    (bytes_of [ 0x82; 0x7e; 0x01; 0x00 ])
    (String.sub (Frame.serialize Binary (String.make 256 'x')) 0 4);
  check "64 KiB: 64-bit length"
    (bytes_of [ 0x82; 0x7f; 0; 0; 0; 0; 0; 1; 0; 0 ])
    (String.sub (Frame.serialize Binary (String.make 65536 'x')) 0 10)

let parse s = Frame.parse_header (Bytes.of_string s) 0 (String.length s)

let roundtrip () =
  List.iter
    (fun (len, mask) ->
      let payload = String.init len (fun i -> Char.chr (i land 255)) in
      let frame = Frame.serialize ?mask ~fin:(len mod 2 = 0) Binary payload in
      match parse frame with
      | Header (h, size) ->
          Alcotest.(check int) "length" len h.length;
          Alcotest.(check bool) "fin" (len mod 2 = 0) h.fin;
          Alcotest.(check (option string)) "mask" mask h.mask;
          Alcotest.(check int) "size" (String.length frame - len) size;
          let body = Bytes.of_string (String.sub frame size len) in
          Option.iter (fun mask -> Frame.apply_mask ~mask body 0 len) mask;
          Alcotest.(check string) "payload" payload (Bytes.to_string body);
          (* Every proper prefix of the header asks for more. *)
          for i = 0 to size - 1 do
            match parse (String.sub frame 0 i) with
            | Need_more -> ()
            | _ -> Alcotest.failf "a %d-byte prefix parsed" i
          done
      | Need_more | Invalid _ -> Alcotest.fail "not parsed")
    [
      (0, None);
      (125, None);
      (126, Some "abcd");
      (65535, None);
      (65536, Some "\xff\x00\x10\x7f");
      (3, Some "wxyz");
    ];
  (match parse "\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x01" with
  | Invalid _ -> ()
  | _ -> Alcotest.fail "a length with its top bit set");
  match parse "\xf3\x00" with
  | Header (h, 2) ->
      Alcotest.(check int) "reserved bits" 7 h.rsv;
      Alcotest.(check bool) "reserved opcode" true (h.opcode = Reserved 3)
  | _ -> Alcotest.fail "reserved bits and opcode"

let masking () =
  let mask = "\x01\x02\x03\x04" in
  let b = Bytes.of_string "hello, world" in
  (* In two pieces, the second starting at payload offset 5. *)
  Frame.apply_mask ~mask b 0 5;
  Frame.apply_mask ~mask ~start:5 b 5 7;
  let whole = Bytes.of_string "hello, world" in
  Frame.apply_mask ~mask whole 0 12;
  Alcotest.(check string)
    "pieces = whole" (Bytes.to_string whole) (Bytes.to_string b);
  Frame.apply_mask ~mask b 0 12;
  Alcotest.(check string) "involution" "hello, world" (Bytes.to_string b);
  (* Word-wide and byte-wide paths agree, from any offset of the key. *)
  let text = String.init 101 (fun i -> Char.chr (i * 37 land 255)) in
  let whole = Bytes.of_string text in
  Frame.apply_mask ~mask whole 0 101;
  List.iter
    (fun cut ->
      let b = Bytes.of_string text in
      Frame.apply_mask ~mask b 0 cut;
      Frame.apply_mask ~mask ~start:cut b cut (101 - cut);
      Alcotest.(check string)
        (Printf.sprintf "cut at %d" cut)
        (Bytes.to_string whole) (Bytes.to_string b))
    [ 0; 1; 3; 5; 8; 13; 50; 100 ];
  let byte_by_byte = Bytes.of_string text in
  for i = 0 to 100 do
    Frame.apply_mask ~mask ~start:i byte_by_byte i 1
  done;
  Alcotest.(check string)
    "byte by byte" (Bytes.to_string whole)
    (Bytes.to_string byte_by_byte);
  Alcotest.check_raises "a 3-byte key"
    (Invalid_argument "Websocket_codec.Frame.apply_mask") (fun () ->
      Frame.apply_mask ~mask:"abc" b 0 1)

(* {1 UTF-8} *)

let utf8 () =
  let valid s =
    Alcotest.(check bool)
      (String.escaped s) true
      (Braid_http.Websocket_codec.Utf8.is_valid s)
  and invalid s =
    Alcotest.(check bool)
      (String.escaped s) false
      (Braid_http.Websocket_codec.Utf8.is_valid s)
  in
  List.iter valid
    [
      "";
      "hello";
      "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5" (* κόσμε *);
      "\xf0\x9f\x98\x80";
      "\xf4\x8f\xbf\xbf" (* U+10FFFF *);
      "\xed\x9f\xbf";
      "\xee\x80\x80";
      "\xef\xbf\xbf";
      "\xc2\x80";
    ];
  List.iter invalid
    [
      "\x80" (* a stray continuation *);
      "\xbf";
      "\xc0\xaf" (* overlong *);
      "\xc1\xbf";
      "\xe0\x80\xaf";
      "\xe0\x9f\xbf";
      "\xf0\x8f\xbf\xbf";
      "\xed\xa0\x80" (* a surrogate *);
      "\xed\xbf\xbf";
      "\xf4\x90\x80\x80" (* past U+10FFFF *);
      "\xf5\x80\x80\x80";
      "\xff";
      "\xfe";
      "\xe2\x82" (* truncated *);
      "a\xc3";
      "\xce\xbaa\xbb";
    ];
  (* Across fragments: a code point split between two. *)
  let s =
    Braid_http.Websocket_codec.Utf8.feed Braid_http.Websocket_codec.Utf8.start
      "price: \xe2\x82"
  in
  Alcotest.(check bool)
    "open, not invalid" false
    (Braid_http.Websocket_codec.Utf8.is_invalid s);
  Alcotest.(check bool)
    "not complete" false
    (Braid_http.Websocket_codec.Utf8.is_complete s);
  let s = Braid_http.Websocket_codec.Utf8.feed s "\xac" in
  Alcotest.(check bool)
    "complete" true
    (Braid_http.Websocket_codec.Utf8.is_complete s);
  let s =
    Braid_http.Websocket_codec.Utf8.feed
      (Braid_http.Websocket_codec.Utf8.feed
         Braid_http.Websocket_codec.Utf8.start "\xed")
      "\xa0\x80"
  in
  Alcotest.(check bool)
    "a split surrogate" true
    (Braid_http.Websocket_codec.Utf8.is_invalid s)

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

let () =
  Alcotest.run "websocket"
    [
      ( "parts",
        [
          Alcotest.test_case "accept key and SHA-1" `Quick accept_key;
          Alcotest.test_case "RFC 6455 frame examples" `Quick rfc_examples;
          Alcotest.test_case "frame round trips" `Quick roundtrip;
          Alcotest.test_case "masking" `Quick masking;
          Alcotest.test_case "UTF-8" `Quick utf8;
        ] );
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
