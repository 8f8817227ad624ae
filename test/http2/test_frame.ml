open Braid_http2

let show f = Format.asprintf "%a" Frame.pp f

let serialise f =
  let b = Buffer.create 64 in
  Frame.write b f;
  Buffer.contents b

let parse ?(max_frame_size = 16384) ?(at = 0) s =
  (* The frame is placed [at] bytes into a larger buffer, after junk, so
     that offsets are exercised. *)
  let b = Bytes.of_string (String.make at '\xee' ^ s ^ "\xee\xee") in
  Frame.parse ~max_frame_size b at (String.length s)

(* A frame by hand: its header, then [payload]. [length] overrides the
   length field. *)
let raw ?length ~frame_type ?(flags = 0) ~stream payload =
  let length = Option.value length ~default:(String.length payload) in
  let b = Buffer.create 16 in
  Buffer.add_uint8 b (length lsr 16);
  Buffer.add_uint16_be b (length land 0xffff);
  Buffer.add_uint8 b frame_type;
  Buffer.add_uint8 b flags;
  Buffer.add_int32_be b (Int32.of_int stream);
  Buffer.add_string b payload;
  Buffer.contents b

let u32 n =
  let b = Bytes.create 4 in
  Bytes.set_int32_be b 0 (Int32.of_int n);
  Bytes.to_string b

let setting id value =
  let b = Bytes.create 6 in
  Bytes.set_uint16_be b 0 id;
  Bytes.set_int32_be b 2 (Int32.of_int value);
  Bytes.to_string b

let p = Frame.payload_of_string

let every_type : Frame.t list =
  [
    Data { stream = 1; end_stream = false; data = p "hello"; pad_length = None };
    Data { stream = 3; end_stream = true; data = p ""; pad_length = Some 0 };
    Data { stream = 5; end_stream = true; data = p "x"; pad_length = Some 255 };
    Headers
      {
        stream = 1;
        end_stream = true;
        end_headers = true;
        priority = None;
        fragment = p "\x82\x86\x84";
        pad_length = None;
      };
    Headers
      {
        stream = 0x7fff_ffff;
        end_stream = false;
        end_headers = false;
        priority = Some { exclusive = true; depends_on = 3; weight = 256 };
        fragment = p "\x82";
        pad_length = Some 4;
      };
    Priority
      {
        stream = 5;
        priority = { exclusive = false; depends_on = 0; weight = 1 };
      };
    Rst_stream { stream = 7; code = Cancel };
    Rst_stream { stream = 7; code = Unknown 0xdead };
    Settings [];
    Settings
      [
        Header_table_size 0;
        Enable_push false;
        Max_concurrent_streams 100;
        Initial_window_size 0x7fff_ffff;
        Max_frame_size 0xff_ffff;
        Max_header_list_size 16384;
        Enable_push true;
        Max_frame_size 16384;
      ];
    Settings_ack;
    Push_promise
      {
        stream = 1;
        end_headers = true;
        promised_stream = 2;
        fragment = p "\x82";
        pad_length = Some 2;
      };
    Ping { ack = false; data = "\x00\x01\x02\x03\x04\x05\x06\x07" };
    Ping { ack = true; data = "pingpong" };
    Goaway { last_stream = 9; code = Enhance_your_calm; debug = "calm down" };
    Goaway { last_stream = 0; code = No_error; debug = "" };
    Window_update { stream = 0; increment = 0x7fff_ffff };
    Window_update { stream = 3; increment = 1 };
    Continuation { stream = 1; end_headers = true; fragment = p "\x84" };
    Unknown
      { frame_type = 0xfa; flags = 0xff; stream = 3; payload = p "grease" };
  ]

let test_roundtrips () =
  List.iteri
    (fun i f ->
      let s = serialise f in
      match parse ~at:(i mod 5) s with
      | Frame (g, used) ->
          Alcotest.(check string) "same frame" (show f) (show g);
          Alcotest.(check int)
            ("bytes used by " ^ show f)
            (String.length s) used
      | Need_more n -> Alcotest.failf "%s: need %d" (show f) n
      | Invalid (v, _) -> Alcotest.failf "%s: %a" (show f) Violation.pp v)
    every_type

let test_wire_bytes () =
  (* A few frames against bytes written out from RFC 9113's layouts. *)
  Alcotest.(check string)
    "SETTINGS ACK" "\x00\x00\x00\x04\x01\x00\x00\x00\x00"
    (serialise Settings_ack);
  Alcotest.(check string)
    "WINDOW_UPDATE" "\x00\x00\x04\x08\x00\x00\x00\x00\x03\x00\x00\x10\x00"
    (serialise (Window_update { stream = 3; increment = 4096 }));
  Alcotest.(check string)
    "padded DATA, END_STREAM"
    "\x00\x00\x05\x00\x09\x00\x00\x00\x01\x02hi\x00\x00"
    (serialise
       (Data
          { stream = 1; end_stream = true; data = p "hi"; pad_length = Some 2 }));
  Alcotest.(check string)
    "HEADERS with priority"
    "\x00\x00\x06\x01\x24\x00\x00\x00\x03\x80\x00\x00\x01\x0f\x82"
    (serialise
       (Headers
          {
            stream = 3;
            end_stream = false;
            end_headers = true;
            priority = Some { exclusive = true; depends_on = 1; weight = 16 };
            fragment = p "\x82";
            pad_length = None;
          }))

let test_partial () =
  let s = serialise (Ping { ack = false; data = "abcdefgh" }) in
  for n = 0 to String.length s - 1 do
    match parse (String.sub s 0 n) with
    | Need_more need ->
        Alcotest.(check int)
          (Printf.sprintf "need after %d bytes" n)
          (if n < 9 then 9 else 17)
          need
    | _ -> Alcotest.failf "a frame from %d bytes" n
  done;
  (* Two frames in one window: the first is read, the rest left. *)
  match parse (s ^ s) with
  | Frame (_, 17) -> ()
  | _ -> Alcotest.fail "first of two"

let test_reserved_bit () =
  match parse (raw ~frame_type:0x8 ~stream:0x8000_0003 (u32 0x8000_0010)) with
  | Frame (Window_update { stream = 3; increment = 16 }, _) -> ()
  | Frame (f, _) -> Alcotest.failf "%s" (show f)
  | _ -> Alcotest.fail "refused"

let test_unknown_setting () =
  match
    parse (raw ~frame_type:0x4 ~stream:0 (setting 0x99 7 ^ setting 0x3 10))
  with
  | Frame (Settings [ Max_concurrent_streams 10 ], 21) -> ()
  | Frame (f, _) -> Alcotest.failf "%s" (show f)
  | _ -> Alcotest.fail "refused"

let test_preface () =
  let check name expected s =
    let got =
      Frame.check_preface (Bytes.of_string s) 0 (String.length s) = expected
    in
    Alcotest.(check bool) name true got
  in
  check "whole" Preface Frame.client_preface;
  check "whole, then a frame" Preface
    (Frame.client_preface ^ serialise Settings_ack);
  check "prefix" Preface_so_far "PRI * HTTP/2";
  check "empty" Preface_so_far "";
  check "HTTP/1.1" Not_preface "GET / HTTP/1.1\r\n";
  check "late difference" Not_preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\r"

(* {1 The RFC's error cases} *)

type expected = Connection of Error_code.t | Stream of int * Error_code.t

let refused ?max_frame_size name frame expected =
  match parse ?max_frame_size frame with
  | Invalid (v, used) -> (
      Alcotest.(check int) (name ^ ": bytes used") (String.length frame) used;
      match (v, expected) with
      | Connection_error { code; _ }, Connection c when code = c -> ()
      | Stream_error { stream; code; _ }, Stream (s, c) when code = c && stream = s -> ()
      | v, _ -> Alcotest.failf "%s: %a" name Violation.pp v)
  | Frame (f, _) -> Alcotest.failf "%s: accepted %s" name (show f)
  | Need_more n -> Alcotest.failf "%s: need %d" name n
[@@ocamlformat "disable"]

let test_errors () =
  let protocol = Connection Protocol_error
  and frame_size = Connection Frame_size_error in
  (* Stream 0, or not 0. *)
  refused "DATA on stream 0" (raw ~frame_type:0x0 ~stream:0 "x") protocol;
  refused "HEADERS on stream 0" (raw ~frame_type:0x1 ~stream:0 "\x82") protocol;
  refused "PRIORITY on stream 0" (raw ~frame_type:0x2 ~stream:0 (u32 1 ^ "\x00")) protocol;
  refused "RST_STREAM on stream 0" (raw ~frame_type:0x3 ~stream:0 (u32 0)) protocol;
  refused "SETTINGS on stream 1" (raw ~frame_type:0x4 ~stream:1 "") protocol;
  refused "PUSH_PROMISE on stream 0" (raw ~frame_type:0x5 ~stream:0 (u32 2)) protocol;
  refused "PING on stream 1" (raw ~frame_type:0x6 ~stream:1 "12345678") protocol;
  refused "GOAWAY on stream 1" (raw ~frame_type:0x7 ~stream:1 (u32 0 ^ u32 0)) protocol;
  refused "CONTINUATION on stream 0" (raw ~frame_type:0x9 ~stream:0 "") protocol;
  (* Sizes. *)
  refused "SETTINGS of 5 bytes" (raw ~frame_type:0x4 ~stream:0 "\x00\x03\x00\x00\x00") frame_size;
  refused "SETTINGS ACK with a payload" (raw ~frame_type:0x4 ~flags:1 ~stream:0 (setting 3 1)) frame_size;
  refused "PING of 7 bytes" (raw ~frame_type:0x6 ~stream:0 "1234567") frame_size;
  refused "PING of 9 bytes" (raw ~frame_type:0x6 ~stream:0 "123456789") frame_size;
  refused "RST_STREAM of 3 bytes" (raw ~frame_type:0x3 ~stream:1 "\x00\x00\x00") frame_size;
  refused "WINDOW_UPDATE of 5 bytes" (raw ~frame_type:0x8 ~stream:1 (u32 1 ^ "\x00")) frame_size;
  refused "GOAWAY of 7 bytes" (raw ~frame_type:0x7 ~stream:0 "\x00\x00\x00\x00\x00\x00\x00") frame_size;
  refused "PRIORITY of 4 bytes, a stream error" (raw ~frame_type:0x2 ~stream:3 (u32 1)) (Stream (3, Frame_size_error));
  refused "HEADERS too short for its priority" (raw ~frame_type:0x1 ~flags:0x20 ~stream:1 "\x00\x00") frame_size;
  refused "PADDED DATA without a pad length" (raw ~frame_type:0x0 ~flags:0x8 ~stream:1 "") frame_size;
  (* A frame larger than SETTINGS_MAX_FRAME_SIZE is refused from its header. *)
  (match parse (String.sub (raw ~frame_type:0x0 ~stream:1 (String.make 16385 'x')) 0 9) with
   | Invalid (Connection_error { code = Frame_size_error; _ }, 16394) -> ()
   | _ -> Alcotest.fail "oversized frame");
  refused ~max_frame_size:20000 "within a larger SETTINGS_MAX_FRAME_SIZE"
    (raw ~frame_type:0x4 ~stream:0 (String.make 19999 '\x00')) frame_size;
  (* Padding. *)
  refused "DATA padding as long as the payload" (raw ~frame_type:0x0 ~flags:0x8 ~stream:1 "\x03abc") protocol;
  refused "DATA padding longer than the payload" (raw ~frame_type:0x0 ~flags:0x8 ~stream:1 "\x09ab") protocol;
  refused "DATA padding not zeros" (raw ~frame_type:0x0 ~flags:0x8 ~stream:1 "\x02a\x00\x01") protocol;
  refused "HEADERS padding into the priority" (raw ~frame_type:0x1 ~flags:0x28 ~stream:1 ("\x02" ^ u32 0 ^ "\x0f" ^ "\x00")) protocol;
  refused "PUSH_PROMISE padding into the promised stream" (raw ~frame_type:0x5 ~flags:0x8 ~stream:1 ("\x01" ^ u32 2)) protocol;
  (* Settings values. *)
  refused "ENABLE_PUSH 2" (raw ~frame_type:0x4 ~stream:0 (setting 2 2)) protocol;
  refused "INITIAL_WINDOW_SIZE 2^31" (raw ~frame_type:0x4 ~stream:0 (setting 4 0x8000_0000)) (Connection Flow_control_error);
  refused "MAX_FRAME_SIZE 2^14-1" (raw ~frame_type:0x4 ~stream:0 (setting 5 16383)) protocol;
  refused "MAX_FRAME_SIZE 2^24" (raw ~frame_type:0x4 ~stream:0 (setting 5 0x100_0000)) protocol;
  refused "a bad value after good ones" (raw ~frame_type:0x4 ~stream:0 (setting 3 1 ^ setting 2 7)) protocol;
  (* WINDOW_UPDATE of 0. *)
  refused "WINDOW_UPDATE 0 on the connection" (raw ~frame_type:0x8 ~stream:0 (u32 0)) protocol;
  refused "WINDOW_UPDATE 0 on a stream" (raw ~frame_type:0x8 ~stream:5 (u32 0)) (Stream (5, Protocol_error));
  refused "WINDOW_UPDATE 0 with the reserved bit" (raw ~frame_type:0x8 ~stream:5 (u32 0x8000_0000)) (Stream (5, Protocol_error));
  (* Priority on itself. *)
  refused "PRIORITY on itself" (raw ~frame_type:0x2 ~stream:3 (u32 3 ^ "\x00")) (Stream (3, Protocol_error))
[@@ocamlformat "disable"]

let test_field_block_split () =
  let block = String.init 40000 (fun i -> Char.chr (i land 0xff)) in
  let b = Buffer.create 41000 in
  Frame.write_field_block b ~max_frame_size:16384 ~stream:5 ~end_stream:true
    ~priority:{ exclusive = false; depends_on = 0; weight = 16 }
    block;
  let bytes = Buffer.to_bytes b in
  let rec frames off acc =
    if off = Bytes.length bytes then List.rev acc
    else
      match Frame.parse ~max_frame_size:16384 bytes off (Bytes.length bytes - off) with
      | Frame (f, used) -> frames (off + used) (f :: acc)
      | _ -> Alcotest.fail "unparsable"
  in
  let shape, fragments =
    List.split
      (List.map
         (function
           | Frame.Headers { stream = 5; end_stream = true; end_headers; fragment; _ } ->
               (("HEADERS", end_headers), Frame.payload_to_string fragment)
           | Continuation { stream = 5; end_headers; fragment } ->
               (("CONTINUATION", end_headers), Frame.payload_to_string fragment)
           | f -> Alcotest.failf "%s" (show f))
         (frames 0 []))
  in
  Alcotest.(check (list (pair string bool))) "frames"
    [ ("HEADERS", false); ("CONTINUATION", false); ("CONTINUATION", true) ] shape;
  Alcotest.(check string) "the block, joined" block (String.concat "" fragments);
  let one = Buffer.create 16 in
  Frame.write_field_block one ~max_frame_size:16384 ~stream:1 ~end_stream:false "\x82";
  match Frame.parse ~max_frame_size:16384 (Buffer.to_bytes one) 0 (Buffer.length one) with
  | Frame (Headers { end_headers = true; _ }, 10) -> ()
  | _ -> Alcotest.fail "a small block is one HEADERS"
[@@ocamlformat "disable"]

let test_flow_controlled_length () =
  Alcotest.(check int)
    "data and padding" 8
    (Frame.flow_controlled_length
       (Data
          {
            stream = 1;
            end_stream = false;
            data = p "abcd";
            pad_length = Some 3;
          }));
  Alcotest.(check int)
    "not DATA" 0
    (Frame.flow_controlled_length (Window_update { stream = 1; increment = 9 }))

let test_write_checks () =
  let rejects name f =
    match serialise f with
    | _ -> Alcotest.failf "%s written" name
    | exception Invalid_argument _ -> ()
  in
  rejects "PING of 7 bytes" (Ping { ack = false; data = "1234567" });
  rejects "stream 2^31" (Rst_stream { stream = 0x8000_0000; code = Cancel });
  rejects "pad 256"
    (Data { stream = 1; end_stream = false; data = p ""; pad_length = Some 256 });
  rejects "weight 0"
    (Priority
       {
         stream = 1;
         priority = { exclusive = false; depends_on = 0; weight = 0 };
       });
  rejects "increment 0" (Window_update { stream = 1; increment = 0 })

(* {1 Property: every frame written is read back} *)

let frame_gen : Frame.t QCheck.Gen.t =
  let open QCheck.Gen in
  let stream = oneof [ return 1; int_range 1 0x7fff_ffff ] in
  let any_stream = oneof [ return 0; stream ] in
  let payload = map p (string_size ~gen:char (0 -- 64)) in
  let pad = opt (int_range 0 255) in
  let prio =
    map3 (fun exclusive depends_on weight -> { Frame.exclusive; depends_on; weight })
      bool (int_range 0 0x7fff_ffff) (int_range 1 256)
  in
  let setting =
    oneof
      [ map (fun n -> Settings.Header_table_size n) (int_range 0 0xffff_ffff);
        map (fun b -> Settings.Enable_push b) bool;
        map (fun n -> Settings.Max_concurrent_streams n) (int_range 0 0xffff_ffff);
        map (fun n -> Settings.Initial_window_size n) (int_range 0 0x7fff_ffff);
        map (fun n -> Settings.Max_frame_size n) (int_range 0x4000 0xff_ffff);
        map (fun n -> Settings.Max_header_list_size n) (int_range 0 0xffff_ffff) ]
  in
  let code = map Error_code.of_int (oneof [ int_range 0 0xd; int_range 0 0xffff_ffff ]) in
  oneof
    [ map3 (fun stream (end_stream, data) pad_length -> Frame.Data { stream; end_stream; data; pad_length })
        stream (pair bool payload) pad;
      map3 (fun stream (end_stream, end_headers, priority) (fragment, pad_length) ->
          Frame.Headers { stream; end_stream; end_headers; priority; fragment; pad_length })
        stream (triple bool bool (opt prio)) (pair payload pad);
      map2 (fun stream priority -> Frame.Priority { stream; priority })
        stream (map (fun pr -> pr) prio)
      |> map (function
           | Frame.Priority { stream; priority } when priority.depends_on = stream ->
               Frame.Priority { stream; priority = { priority with depends_on = 0 } }
           | f -> f);
      map2 (fun stream code -> Frame.Rst_stream { stream; code }) stream code;
      map (fun l -> Frame.Settings l) (list_size (0 -- 8) setting);
      return Frame.Settings_ack;
      map3 (fun stream (end_headers, promised_stream) (fragment, pad_length) ->
          Frame.Push_promise { stream; end_headers; promised_stream; fragment; pad_length })
        stream (pair bool (int_range 0 0x7fff_ffff)) (pair payload pad);
      map2 (fun ack data -> Frame.Ping { ack; data }) bool (string_size ~gen:char (return 8));
      map3 (fun last_stream code debug -> Frame.Goaway { last_stream; code; debug })
        (int_range 0 0x7fff_ffff) code (string_size ~gen:char (0 -- 32));
      map2 (fun stream increment -> Frame.Window_update { stream; increment })
        any_stream (int_range 1 0x7fff_ffff);
      map3 (fun stream end_headers fragment -> Frame.Continuation { stream; end_headers; fragment })
        stream bool payload;
      map3 (fun frame_type (flags, stream) payload -> Frame.Unknown { frame_type; flags; stream; payload })
        (int_range 0xa 0xff) (pair (int_range 0 0xff) any_stream) payload ]
[@@ocamlformat "disable"]

let frame_roundtrip =
  QCheck.Test.make ~name:"parse (write f) = f" ~count:3000
    (QCheck.make ~print:show frame_gen) (fun f ->
      let s = serialise f in
      match parse ~at:3 s with
      | Frame (g, used) -> show f = show g && used = String.length s
      | Need_more _ | Invalid _ -> false)

let parse_total =
  QCheck.Test.make ~name:"arbitrary bytes give a result" ~count:5000
    QCheck.(string_gen_of_size Gen.(0 -- 40) Gen.char)
    (fun s ->
      match parse s with
      | Frame (_, used) -> used <= String.length s
      | Invalid _ -> true
      | Need_more n -> n > String.length s)

let () =
  Alcotest.run "frame"
    [
      ( "frames",
        [
          Alcotest.test_case "every type, written and read" `Quick
            test_roundtrips;
          Alcotest.test_case "bytes on the wire" `Quick test_wire_bytes;
          Alcotest.test_case "partial windows" `Quick test_partial;
          Alcotest.test_case "reserved bit ignored" `Quick test_reserved_bit;
          Alcotest.test_case "unknown setting skipped" `Quick
            test_unknown_setting;
          Alcotest.test_case "client preface" `Quick test_preface;
          Alcotest.test_case "field blocks split" `Quick test_field_block_split;
          Alcotest.test_case "flow-controlled length" `Quick
            test_flow_controlled_length;
          Alcotest.test_case "writing checks its arguments" `Quick
            test_write_checks;
        ]
        @ List.map QCheck_alcotest.to_alcotest [ frame_roundtrip ] );
      ( "errors",
        [ Alcotest.test_case "RFC 9113's error cases" `Quick test_errors ]
        @ List.map QCheck_alcotest.to_alcotest [ parse_total ] );
    ]
