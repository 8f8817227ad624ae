open Braid_http2

let hex s =
  let s = String.concat "" (String.split_on_char ' ' s) in
  String.init
    (String.length s / 2)
    (fun i -> Char.chr (int_of_string ("0x" ^ String.sub s (2 * i) 2)))

let to_hex s =
  String.concat ""
    (List.map (Printf.sprintf "%02x")
       (List.map Char.code (List.of_seq (String.to_seq s))))

(* {1 Huffman} *)

let test_codes () =
  (* Spot checks against RFC 7541 Appendix B's hex column, spread over the
     table so that a wrong length anywhere shifts some of them. *)
  List.iter
    (fun (sym, code, length) ->
      Alcotest.(check (pair int int))
        (Printf.sprintf "symbol %d" sym)
        (code, length) (Huffman.code_of_symbol sym))
    [
      (0, 0x1ff8, 13); (1, 0x7fffd8, 23); (10, 0x3ffffffc, 30);
      (32, 0x14, 6); (48, 0x0, 5); (65, 0x21, 6); (92, 0x7fff0, 19);
      (97, 0x3, 5); (126, 0x1ffd, 13); (127, 0xffffffc, 28);
      (128, 0xfffe6, 20); (153, 0x1fffdc, 21); (192, 0x3ffffe0, 26);
      (203, 0x7ffffde, 27); (220, 0xffffffd, 28); (249, 0xffffffe, 28);
      (255, 0x3ffffee, 26); (256, 0x3fffffff, 30);
    ]
  [@@ocamlformat "disable"]

let test_kraft () =
  (* A complete prefix code: the code space is used exactly once. *)
  let total =
    List.fold_left
      (fun acc sym -> acc + (1 lsl (30 - snd (Huffman.code_of_symbol sym))))
      0 (List.init 257 Fun.id)
  in
  Alcotest.(check int) "sum of 2^-length is 1" (1 lsl 30) total

let huffman_examples =
  (* RFC 7541 C.4 and C.6 literals. *)
  [
    ("www.example.com", "f1e3c2e5f23a6ba0ab90f4ff");
    ("no-cache", "a8eb10649cbf");
    ("custom-key", "25a849e95ba97d7f");
    ("custom-value", "25a849e95bb8e8b4bf");
    ("302", "6402");
    ("307", "640eff");
    ("private", "aec3771a4b");
    ( "Mon, 21 Oct 2013 20:13:21 GMT",
      "d07abe941054d444a8200595040b8166e082a62d1bff" );
    ("https://www.example.com", "9d29ad171863c78f0b97c8e9ae82ae43d3");
    ("gzip", "9bd9ab");
  ]

let test_huffman_examples () =
  List.iter
    (fun (plain, coded) ->
      let b = Buffer.create 32 in
      Huffman.encode b plain;
      Alcotest.(check string)
        ("encode " ^ plain) coded
        (to_hex (Buffer.contents b));
      Alcotest.(check int)
        ("length " ^ plain)
        (String.length coded / 2)
        (Huffman.encoded_length plain);
      Alcotest.(check (option string))
        ("decode " ^ plain) (Some plain)
        (Huffman.decode_string (hex coded)))
    huffman_examples

let test_huffman_invalid () =
  let rejects name coded =
    Alcotest.(check (option string))
      name None
      (Huffman.decode_string (hex coded))
  in
  (* 'a' is 00011: padded with 111 it is 1f. *)
  Alcotest.(check (option string))
    "a" (Some "a")
    (Huffman.decode_string (hex "1f"));
  rejects "padding not all ones" "18";
  rejects "padding of 11 bits" "1fff";
  rejects "a byte of padding alone" "ff";
  rejects "EOS, then padding" "ffffffff";
  rejects "EOS after a symbol" "1fffffffff";
  Alcotest.(check (option string)) "empty" (Some "") (Huffman.decode_string "")

let huffman_roundtrip =
  QCheck.Test.make ~name:"Huffman: decode (encode s) = s" ~count:2000
    QCheck.(string_gen Gen.char)
    (fun s ->
      let b = Buffer.create 16 in
      Huffman.encode b s;
      Buffer.length b = Huffman.encoded_length s
      && Huffman.decode_string (Buffer.contents b) = Some s)

let huffman_truncated =
  (* Cutting a coding short leaves bits that are not valid padding, unless
     the cut falls where the rest was only whole symbols; either way the
     decoder must not invent bytes. *)
  QCheck.Test.make ~name:"Huffman: a cut coding never decodes to more"
    ~count:1000
    QCheck.(pair (string_gen_of_size Gen.(1 -- 40) Gen.printable) small_nat)
    (fun (s, cut) ->
      let b = Buffer.create 16 in
      Huffman.encode b s;
      let coded = Buffer.contents b in
      let keep = cut mod String.length coded in
      match Huffman.decode_string (String.sub coded 0 keep) with
      | None -> true
      | Some prefix ->
          String.length prefix < String.length s
          && String.sub s 0 (String.length prefix) = prefix)

(* {1 Decoding: RFC 7541 Appendix C} *)

let fields_t = Alcotest.(list (pair string string))

let all_fields (h : Hpack.header_list) =
  List.map (fun (f : Hpack.field) -> (f.name, f.value)) (h.pseudo @ h.regular)

let decode_ok d block =
  match Hpack.Decoder.decode_string d (hex block) with
  | Ok h -> h
  | Error e -> Alcotest.failf "%s: %a" block Hpack.Decoder.pp_error e

let check_step d (block, fields, table, size) =
  let h = decode_ok d block in
  Alcotest.check fields_t ("fields of " ^ block) fields (all_fields h);
  Alcotest.check fields_t ("table after " ^ block) table
    (Hpack.Decoder.table_entries d);
  Alcotest.(check int) ("size after " ^ block) size (Hpack.Decoder.table_size d)

let c2 () =
  let d = Hpack.Decoder.create () in
  check_step d
    ( "400a637573746f6d2d6b65790d637573746f6d2d686561646572",
      [ ("custom-key", "custom-header") ],
      [ ("custom-key", "custom-header") ],
      55 );
  let d = Hpack.Decoder.create () in
  check_step d
    ("040c2f73616d706c652f70617468", [ (":path", "/sample/path") ], [], 0);
  let d = Hpack.Decoder.create () in
  let h = decode_ok d "100870617373776f726406736563726574" in
  Alcotest.check fields_t "C.2.3" [ ("password", "secret") ] (all_fields h);
  Alcotest.(check bool) "never indexed" true (List.hd h.regular).never_indexed;
  Alcotest.(check int) "not in the table" 0 (Hpack.Decoder.table_size d);
  let d = Hpack.Decoder.create () in
  check_step d ("82", [ (":method", "GET") ], [], 0)

let request1 =
  [
    (":method", "GET");
    (":scheme", "http");
    (":path", "/");
    (":authority", "www.example.com");
  ]

let request2 =
  [
    (":method", "GET");
    (":scheme", "http");
    (":path", "/");
    (":authority", "www.example.com");
    ("cache-control", "no-cache");
  ]

let request3 =
  [
    (":method", "GET");
    (":scheme", "https");
    (":path", "/index.html");
    (":authority", "www.example.com");
    ("custom-key", "custom-value");
  ]

let table1 = [ (":authority", "www.example.com") ]
let table2 = ("cache-control", "no-cache") :: table1
let table3 = ("custom-key", "custom-value") :: table2

let c3_blocks =
  [
    "828684410f7777772e6578616d706c652e636f6d";
    "828684be58086e6f2d6361636865";
    "828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565";
  ]

let c4_blocks =
  [
    "828684418cf1e3c2e5f23a6ba0ab90f4ff";
    "828684be5886a8eb10649cbf";
    "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf";
  ]

let requests blocks =
  List.combine blocks
    [ (request1, table1, 57); (request2, table2, 110); (request3, table3, 164) ]
  |> List.map (fun (b, (f, t, s)) -> (b, f, t, s))

let date1 = "Mon, 21 Oct 2013 20:13:21 GMT"
let date2 = "Mon, 21 Oct 2013 20:13:22 GMT"
let cookie = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
let location = "https://www.example.com"

let response1 =
  [
    (":status", "302");
    ("cache-control", "private");
    ("date", date1);
    ("location", location);
  ]

let response2 =
  [
    (":status", "307");
    ("cache-control", "private");
    ("date", date1);
    ("location", location);
  ]

let response3 =
  [
    (":status", "200");
    ("cache-control", "private");
    ("date", date2);
    ("location", location);
    ("content-encoding", "gzip");
    ("set-cookie", cookie);
  ]

let rtable1 =
  [
    ("location", location);
    ("date", date1);
    ("cache-control", "private");
    (":status", "302");
  ]

let rtable2 =
  [
    (":status", "307");
    ("location", location);
    ("date", date1);
    ("cache-control", "private");
  ]

let rtable3 =
  [ ("set-cookie", cookie); ("content-encoding", "gzip"); ("date", date2) ]

let c5_blocks =
  [
    "4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d";
    "4803333037c1c0bf";
    "88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31";
  ]

let c6_blocks =
  [ "488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3";
    "4883640effc1c0bf";
    "88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007" ]
[@@ocamlformat "disable"]

let responses blocks =
  List.combine blocks
    [
      (response1, rtable1, 222);
      (response2, rtable2, 222);
      (response3, rtable3, 215);
    ]
  |> List.map (fun (b, (f, t, s)) -> (b, f, t, s))

let decode_sequence ?max_table_size steps () =
  let d = Hpack.Decoder.create ?max_table_size () in
  List.iter (check_step d) steps

(* The encoder must produce the RFC's bytes exactly, and the same tables. *)
let encode_sequence ?max_table_size ?indexing ~huffman steps () =
  let e = Hpack.Encoder.create ?max_table_size ~huffman () in
  List.iter
    (fun (block, fields, table, size) ->
      let b = Buffer.create 64 in
      Hpack.Encoder.encode ?indexing e b fields;
      Alcotest.(check string) "block" block (to_hex (Buffer.contents b));
      Alcotest.check fields_t "table" table (Hpack.Encoder.table_entries e);
      Alcotest.(check int) "size" size (Hpack.Encoder.table_size e))
    steps

let index_all _ _ = Hpack.Incremental

(* {1 Malformed and hostile blocks} *)

let decode_error ?(d = Hpack.Decoder.create ()) block =
  match Hpack.Decoder.decode_string d (hex block) with
  | Ok _ -> Alcotest.failf "%s decoded" block
  | Error e -> e

let is_compression name block =
  match decode_error block with
  | Compression_error _ -> ()
  | e -> Alcotest.failf "%s: %a" name Hpack.Decoder.pp_error e

let test_compression_errors () =
  is_compression "index 0" "80";
  is_compression "index past the static table, empty dynamic table" "be";
  is_compression "index far out" "ff8001";
  is_compression "integer with too many continuation bytes" "ff8080808001";
  is_compression "integer overflowing 63 bits" "ffffffffffffffffffffff7f";
  is_compression "truncated integer" "ff";
  is_compression "truncated integer, continuation announced" "ff80";
  is_compression "string longer than the block" "400a6375";
  is_compression "missing value" "400161";
  is_compression "Huffman name with bad padding" "408118017a";
  is_compression "Huffman value containing EOS" "40016184ffffffff";
  is_compression "table size update above 4096" "3fe21f";
  is_compression "table size update after a field" "8220";
  (* The failed decoder refuses what follows: its table may be wrong. *)
  let d = Hpack.Decoder.create () in
  ignore (decode_error ~d "80");
  match decode_error ~d "82" with
  | Compression_error _ -> ()
  | e -> Alcotest.failf "after a failure: %a" Hpack.Decoder.pp_error e

let test_table_size_updates () =
  let d = Hpack.Decoder.create () in
  Alcotest.check fields_t "update alone" [] (all_fields (decode_ok d "3fe11f"));
  Alcotest.check fields_t "two updates, then a field"
    [ (":method", "GET") ]
    (all_fields (decode_ok d "20 3fe11f 82"));
  ignore (decode_ok d "4001610162");
  Alcotest.(check int) "entry added" 34 (Hpack.Decoder.table_size d);
  ignore (decode_ok d "20");
  Alcotest.(check int)
    "update to 0 empties the table" 0
    (Hpack.Decoder.table_size d);
  (* A lower SETTINGS_HEADER_TABLE_SIZE, acknowledged: the next block must
     begin with an update within it. *)
  let lowered () =
    let d = Hpack.Decoder.create () in
    Hpack.Decoder.set_max_table_size d 100;
    d
  in
  (match decode_error ~d:(lowered ()) "82" with
  | Compression_error _ -> ()
  | e -> Alcotest.failf "no update: %a" Hpack.Decoder.pp_error e);
  (match decode_error ~d:(lowered ()) "3f46 82" with
  | Compression_error _ -> ()
  | e -> Alcotest.failf "update to 101: %a" Hpack.Decoder.pp_error e);
  let d = lowered () in
  ignore (decode_ok d "3f45 82");
  ignore (decode_ok d "82")

let test_header_list_limit () =
  let d = Hpack.Decoder.create ~max_header_list_size:100 () in
  (* Each :method GET counts 32 + 7 + 3 = 42. *)
  ignore (decode_ok d "8282");
  (match decode_error ~d "4001610162 828282" with
  | Header_list_too_large { limit = 100 } -> ()
  | e -> Alcotest.failf "%a" Hpack.Decoder.pp_error e);
  (* The block was decoded to its end: the entry it added is there. *)
  Alcotest.check fields_t "table in step"
    [ ("a", "b") ]
    (all_fields (decode_ok d "be"));
  (* A bomb: a 4000-byte entry, then 20000 one-byte references to it. *)
  let d = Hpack.Decoder.create () in
  let block =
    "\x40\x01x\x7f\xa1\x1e" ^ String.make 4000 'v' ^ String.make 20000 '\xbe'
  in
  match Hpack.Decoder.decode_string d block with
  | Error (Header_list_too_large { limit = 65536 }) ->
      Alcotest.(check int)
        "entry kept"
        (32 + 1 + 4000)
        (Hpack.Decoder.table_size d)
  | Error e -> Alcotest.failf "bomb: %a" Hpack.Decoder.pp_error e
  | Ok _ -> Alcotest.fail "bomb decoded"

let encode ?indexing e fields =
  let b = Buffer.create 64 in
  Hpack.Encoder.encode ?indexing e b fields;
  Buffer.contents b

let test_malformed () =
  let malformed fields =
    let e = Hpack.Encoder.create () and d = Hpack.Decoder.create () in
    (match Hpack.Decoder.decode_string d (encode e fields) with
    | Error (Malformed _) -> ()
    | Error e -> Alcotest.failf "%a" Hpack.Decoder.pp_error e
    | Ok _ ->
        Alcotest.failf "accepted %s"
          (String.concat ", " (List.map (fun (n, v) -> n ^ ": " ^ v) fields)));
    Alcotest.check fields_t "tables in step"
      (Hpack.Encoder.table_entries e)
      (Hpack.Decoder.table_entries d)
  in
  malformed [ ("Foo", "bar") ];
  malformed [ ("", "bar") ];
  malformed [ ("a b", "c") ];
  malformed [ ("a:b", "c") ];
  malformed [ ("a", "b\r\nc: d") ];
  malformed [ ("a", "nul\000") ];
  malformed [ ("a", " leading") ];
  malformed [ ("a", "trailing\t") ];
  malformed [ (":Path", "/") ];
  malformed [ ("a", "b"); (":path", "/") ];
  malformed [ ("a", "b"); (":path", "/x") ];
  (* A malformed literal still enters the table (the tables stay in step):
     an index to it later is as malformed, though the decoder checks the
     fields it indexes only once, when they come as literals. *)
  (let e = Hpack.Encoder.create () and d = Hpack.Decoder.create () in
   let fields = [ ("X-Upper", "v"); ("ok", "v") ] in
   List.iter
     (fun round ->
       match
         Hpack.Decoder.decode_string d (encode ~indexing:index_all e fields)
       with
       | Error (Malformed _) -> ()
       | Error e -> Alcotest.failf "%a" Hpack.Decoder.pp_error e
       | Ok _ -> Alcotest.failf "round %d accepted an uppercase name" round)
     [ 1; 2 ];
   match Hpack.Decoder.decode_string d (hex "be") with
   | Ok h ->
       Alcotest.check fields_t "the valid entry" [ ("ok", "v") ] (all_fields h)
   | Error e -> Alcotest.failf "%a" Hpack.Decoder.pp_error e);
  let d = Hpack.Decoder.create () in
  let h =
    match
      Hpack.Decoder.decode_string d
        (encode (Hpack.Encoder.create ())
           [ (":method", "GET"); (":path", "/x"); ("a", "b c"); ("a", "") ])
    with
    | Ok h -> h
    | Error e -> Alcotest.failf "%a" Hpack.Decoder.pp_error e
  in
  Alcotest.check fields_t "pseudo"
    [ (":method", "GET"); (":path", "/x") ]
    (List.map (fun (f : Hpack.field) -> (f.name, f.value)) h.pseudo);
  Alcotest.check fields_t "regular"
    [ ("a", "b c"); ("a", "") ]
    (List.map (fun (f : Hpack.field) -> (f.name, f.value)) h.regular)

let test_violations () =
  let code = Alcotest.testable Error_code.pp ( = ) in
  (match Hpack.Decoder.to_violation ~stream:3 (Compression_error "x") with
  | Connection_error { code = c; _ } ->
      Alcotest.check code "compression" Error_code.Compression_error c
  | v -> Alcotest.failf "%a" Violation.pp v);
  match Hpack.Decoder.to_violation ~stream:3 (Malformed "x") with
  | Stream_error { stream = 3; code = c; _ } ->
      Alcotest.check code "malformed" Error_code.Protocol_error c
  | v -> Alcotest.failf "%a" Violation.pp v

(* {1 The encoder's choices} *)

let first_byte s = Char.code s.[0]

let test_indexing_policy () =
  let e = Hpack.Encoder.create () and d = Hpack.Decoder.create () in
  let roundtrip fields =
    let block = encode e fields in
    match Hpack.Decoder.decode_string d block with
    | Ok h -> (block, h)
    | Error err -> Alcotest.failf "%a" Hpack.Decoder.pp_error err
  in
  let block, h = roundtrip [ ("authorization", "Bearer secret") ] in
  Alcotest.(check int) "never indexed, name 23" 0x1f (first_byte block);
  Alcotest.(check bool) "flag decoded" true (List.hd h.regular).never_indexed;
  let again, _ = roundtrip [ ("authorization", "Bearer secret") ] in
  Alcotest.(check string) "a repeat is a literal again" block again;
  let block, _ = roundtrip [ ("cookie", "sid=1234") ] in
  Alcotest.(check int)
    "short cookie never indexed" 0x10
    (first_byte block land 0xf0);
  let block, _ = roundtrip [ ("set-cookie", String.make 40 'k') ] in
  Alcotest.(check int)
    "set-cookie never indexed" 0x10
    (first_byte block land 0xf0);
  Alcotest.(check int) "nothing indexed yet" 0 (Hpack.Encoder.table_size e);
  let block, _ = roundtrip [ (":path", "/search?q=1") ] in
  Alcotest.(check int) ":path without indexing, name 4" 0x04 (first_byte block);
  let long_cookie = "session=" ^ String.make 30 'z' in
  let block, _ = roundtrip [ ("cookie", long_cookie) ] in
  Alcotest.(check int) "long cookie indexed, name 32" 0x60 (first_byte block);
  let block, _ = roundtrip [ ("cookie", long_cookie) ] in
  Alcotest.(check string) "then sent as index 62" "be" (to_hex block);
  let block, _ = roundtrip [ ("x-big", String.make 3000 'b') ] in
  Alcotest.(check int)
    "an entry over half the table is not indexed" 0x00 (first_byte block);
  Alcotest.check fields_t "tables in step"
    (Hpack.Encoder.table_entries e)
    (Hpack.Decoder.table_entries d)

let test_encoder_size_updates () =
  let e = Hpack.Encoder.create ~limit:256 () in
  let block = encode e [ (":method", "GET") ] in
  Alcotest.(check string)
    "limit below the peer's 4096" "3fe10182" (to_hex block);
  Alcotest.(check string)
    "said once" "82"
    (to_hex (encode e [ (":method", "GET") ]));
  ignore (encode e [ ("a", "b") ]);
  Hpack.Encoder.set_max_table_size e 0;
  Hpack.Encoder.set_max_table_size e 4096;
  Alcotest.(check int) "emptied" 0 (Hpack.Encoder.table_size e);
  Alcotest.(check string)
    "smallest, then current (the limit)" "203fe10182"
    (to_hex (encode e [ (":method", "GET") ]));
  Hpack.Encoder.set_max_table_size e 1000;
  Alcotest.(check string)
    "no change, no update" "82"
    (to_hex (encode e [ (":method", "GET") ]))

(* {1 Properties} *)

let field_gen =
  let open QCheck.Gen in
  let value_char =
    oneof
      [
        char_range 'a' 'z';
        char_range '0' '9';
        oneofl [ '-'; '/'; '='; ';'; ' '; '\xe9' ];
      ]
  in
  let value =
    oneof
      [
        oneofl [ ""; "GET"; "/"; "200"; "gzip, deflate"; "no-cache" ];
        map (fun s -> "v" ^ s ^ "v") (string_size ~gen:value_char (0 -- 60));
      ]
  in
  let name =
    oneof
      [
        oneofl
          [
            "accept";
            "cookie";
            "date";
            "user-agent";
            "authorization";
            "x-a";
            "x-b";
            "cache-control";
          ];
        map
          (fun s -> "x-" ^ s)
          (string_size ~gen:(char_range 'a' 'z') (1 -- 12));
      ]
  in
  pair name value

let pseudo_gen =
  QCheck.Gen.(pair (oneofl [ ":method"; ":path"; ":status"; ":authority" ])
                (oneofl [ "GET"; "/"; "/index.html"; "200"; "example.com"; "/a/b" ]))
[@@ocamlformat "disable"]

let blocks_arb =
  let open QCheck.Gen in
  let block = pair (list_size (0 -- 4) pseudo_gen) (list_size (0 -- 12) field_gen) in
  QCheck.make
    ~print:(fun (size, huffman, blocks) ->
      Printf.sprintf "table %d, huffman %b, %s" size huffman
        (String.concat " | "
           (List.map
              (fun (p, r) -> String.concat ", " (List.map (fun (n, v) -> n ^ ": " ^ v) (p @ r)))
              blocks)))
    (triple (oneofl [ 0; 64; 256; 4096 ]) bool (list_size (1 -- 8) block))
[@@ocamlformat "disable"]

let hpack_roundtrip =
  QCheck.Test.make
    ~name:"HPACK: decode (encode fields) = fields, tables in step" ~count:1000
    blocks_arb (fun (size, huffman, blocks) ->
      let e = Hpack.Encoder.create ~limit:size ~huffman () in
      let d = Hpack.Decoder.create () in
      List.for_all
        (fun (pseudo, regular) ->
          match Hpack.Decoder.decode_string d (encode e (pseudo @ regular)) with
          | Ok h ->
              all_fields h = pseudo @ regular
              && Hpack.Encoder.table_entries e = Hpack.Decoder.table_entries d
              && Hpack.Decoder.table_size d <= size
          | Error err ->
              QCheck.Test.fail_reportf "%a" Hpack.Decoder.pp_error err)
        blocks)

(* The first representation of a block: [`Indexed i] or [`Literal i] (a
   literal without indexing whose name is at index [i], 0 if sent). *)
let first_representation block =
  let integer ~prefix =
    let mask = (1 lsl prefix) - 1 in
    let v = Char.code block.[0] land mask in
    if v < mask then v
    else
      let rec more v shift i =
        let byte = Char.code block.[i] in
        let v = v + ((byte land 0x7f) lsl shift) in
        if byte land 0x80 = 0 then v else more v (shift + 7) (i + 1)
      in
      more v 0 1
  in
  if Char.code block.[0] land 0x80 <> 0 then `Indexed (integer ~prefix:7)
  else `Literal (integer ~prefix:4)

let rec position x = function
  | [] -> None
  | y :: rest -> if y = x then Some 1 else Option.map succ (position x rest)

let encoder_finds =
  (* The encoder's look-up (hashed, not a scan) finds the newest entry
     holding a field, or else its name, whatever evictions and growth
     happened: checked against the table's own list. Names from outside
     the static table, so that the dynamic table answers. *)
  let names = [ "x-a"; "x-b"; "x-c"; "x-long-name-here"; "x-d" ] in
  let field =
    QCheck.Gen.(
      pair (oneofl names)
        (oneof
           [
             oneofl [ ""; "1"; "same"; "Sat, 28 Nov 2026 10:05:14 GMT" ];
             map string_of_int (0 -- 40);
             map (fun n -> String.make n 'z') (0 -- 30);
           ]))
  in
  QCheck.Test.make ~name:"HPACK: the encoder finds the newest entry" ~count:500
    QCheck.(
      make
        Gen.(pair (oneofl [ 64; 200; 512; 4096 ]) (list_size (1 -- 200) field)))
    (fun (size, fields) ->
      let e = Hpack.Encoder.create ~limit:size () in
      List.for_all
        (fun (name, value) ->
          ignore (encode ~indexing:index_all e [ (name, value) ]);
          (* Every entry, the one just added if it fitted. *)
          let entries = Hpack.Encoder.table_entries e in
          List.for_all
            (fun (n, v) ->
              let whole = position (n, v) entries in
              let named = position n (List.map fst entries) in
              (* An indexed field adds nothing; a probe without indexing
                 neither: the table stays as it was for the next one. *)
              let found =
                first_representation (encode ~indexing:index_all e [ (n, v) ])
              and by_name =
                first_representation
                  (encode
                     ~indexing:(fun _ _ -> Hpack.Without_indexing)
                     e
                     [ (n, v ^ "-absent") ])
              in
              found = `Indexed (61 + Option.get whole)
              && by_name = `Literal (61 + Option.get named))
            entries)
        fields)

let decoder_total =
  (* Whatever the bytes, the decoder answers (no exception). *)
  QCheck.Test.make ~name:"HPACK: arbitrary bytes give a result" ~count:5000
    QCheck.(string_gen_of_size Gen.(0 -- 64) Gen.char)
    (fun s ->
      match Hpack.Decoder.decode_string (Hpack.Decoder.create ()) s with
      | Ok _ | Error _ -> true)

let () =
  let qcheck = List.map QCheck_alcotest.to_alcotest in
  Alcotest.run "hpack"
    [
      ( "huffman",
        [
          Alcotest.test_case "codes of Appendix B" `Quick test_codes;
          Alcotest.test_case "a complete code" `Quick test_kraft;
          Alcotest.test_case "literals of C.4 and C.6" `Quick
            test_huffman_examples;
          Alcotest.test_case "EOS and bad padding" `Quick test_huffman_invalid;
        ]
        @ qcheck [ huffman_roundtrip; huffman_truncated ] );
      ( "appendix C",
        [
          Alcotest.test_case "C.2 field representations" `Quick c2;
          Alcotest.test_case "C.3 decode requests" `Quick
            (decode_sequence (requests c3_blocks));
          Alcotest.test_case "C.4 decode requests, Huffman" `Quick
            (decode_sequence (requests c4_blocks));
          Alcotest.test_case "C.5 decode responses, eviction" `Quick
            (decode_sequence ~max_table_size:256 (responses c5_blocks));
          Alcotest.test_case "C.6 decode responses, Huffman" `Quick
            (decode_sequence ~max_table_size:256 (responses c6_blocks));
          Alcotest.test_case "C.3 encode" `Quick
            (encode_sequence ~huffman:false (requests c3_blocks));
          Alcotest.test_case "C.4 encode" `Quick
            (encode_sequence ~huffman:true (requests c4_blocks));
          Alcotest.test_case "C.5 encode" `Quick
            (encode_sequence ~max_table_size:256 ~indexing:index_all
               ~huffman:false (responses c5_blocks));
          Alcotest.test_case "C.6 encode" `Quick
            (encode_sequence ~max_table_size:256 ~indexing:index_all
               ~huffman:true (responses c6_blocks));
        ] );
      ( "decoder limits",
        [
          Alcotest.test_case "compression errors" `Quick test_compression_errors;
          Alcotest.test_case "table size updates" `Quick test_table_size_updates;
          Alcotest.test_case "header list size, bombs" `Quick
            test_header_list_limit;
          Alcotest.test_case "malformed field lists" `Quick test_malformed;
          Alcotest.test_case "errors as violations" `Quick test_violations;
        ]
        @ qcheck [ decoder_total ] );
      ( "encoder",
        [
          Alcotest.test_case "indexing policy" `Quick test_indexing_policy;
          Alcotest.test_case "table size updates" `Quick
            test_encoder_size_updates;
        ]
        @ qcheck [ hpack_roundtrip; encoder_finds ] );
    ]
