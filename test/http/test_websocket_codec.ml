(* WebSocket codec units: the accept key and the SHA-1 it rests on, frames,
   masking, UTF-8. No connection (they were in test/server/test_websocket.ml,
   whose sessions need one). *)

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

let () =
  Alcotest.run "websocket codec"
    [
      ( "parts",
        [
          Alcotest.test_case "accept key and SHA-1" `Quick accept_key;
          Alcotest.test_case "RFC 6455 frame examples" `Quick rfc_examples;
          Alcotest.test_case "frame round trips" `Quick roundtrip;
          Alcotest.test_case "masking" `Quick masking;
          Alcotest.test_case "UTF-8" `Quick utf8;
        ] );
    ]
