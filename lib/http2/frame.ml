let client_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

type preface_check = Preface | Preface_so_far | Not_preface

let check_preface b off len =
  let n = String.length client_preface in
  let rec same i =
    i >= min len n
    || Bytes.get b (off + i) = String.unsafe_get client_preface i
       && same (i + 1)
  in
  if off < 0 || len < 0 || off > Bytes.length b - len then
    invalid_arg "Frame.check_preface";
  if not (same 0) then Not_preface
  else if len >= n then Preface
  else Preface_so_far

type payload = { bytes : bytes; off : int; len : int }

let payload_of_string s =
  { bytes = Bytes.unsafe_of_string s; off = 0; len = String.length s }

let payload_to_string p = Bytes.sub_string p.bytes p.off p.len

type priority = { exclusive : bool; depends_on : int; weight : int }

type t =
  | Data of {
      stream : int;
      end_stream : bool;
      data : payload;
      pad_length : int option;
    }
  | Headers of {
      stream : int;
      end_stream : bool;
      end_headers : bool;
      priority : priority option;
      fragment : payload;
      pad_length : int option;
    }
  | Priority of { stream : int; priority : priority }
  | Rst_stream of { stream : int; code : Error_code.t }
  | Settings of Settings.setting list
  | Settings_ack
  | Push_promise of {
      stream : int;
      end_headers : bool;
      promised_stream : int;
      fragment : payload;
      pad_length : int option;
    }
  | Ping of { ack : bool; data : string }
  | Goaway of { last_stream : int; code : Error_code.t; debug : string }
  | Window_update of { stream : int; increment : int }
  | Continuation of { stream : int; end_headers : bool; fragment : payload }
  | Unknown of {
      frame_type : int;
      flags : int;
      stream : int;
      payload : payload;
    }

let frame_header_length = 9

let stream = function
  | Data { stream; _ }
  | Headers { stream; _ }
  | Priority { stream; _ }
  | Rst_stream { stream; _ }
  | Push_promise { stream; _ }
  | Window_update { stream; _ }
  | Continuation { stream; _ }
  | Unknown { stream; _ } ->
      stream
  | Settings _ | Settings_ack | Ping _ | Goaway _ -> 0

let padding_overhead = function None -> 0 | Some n -> 1 + n

let flow_controlled_length = function
  | Data { data; pad_length; _ } -> data.len + padding_overhead pad_length
  | _ -> 0

(* Frame types (§6) and flags. *)
let data_type = 0x0
and headers_type = 0x1
and priority_type = 0x2
and rst_stream_type = 0x3
and settings_type = 0x4
and push_promise_type = 0x5
and ping_type = 0x6
and goaway_type = 0x7
and window_update_type = 0x8
and continuation_type = 0x9

let end_stream_flag = 0x1
and ack_flag = 0x1
and end_headers_flag = 0x4
and padded_flag = 0x8
and priority_flag = 0x20

(* {1 Parsing} *)

type parsed =
  | Frame of t * int
  | Need_more of int
  | Invalid of Violation.t * int

exception Refused of Violation.t

let connection_error code reason =
  raise_notrace (Refused (Connection_error { code; reason }))

let stream_error stream code reason =
  raise_notrace (Refused (Stream_error { stream; code; reason }))

let u8 b i = Char.code (Bytes.unsafe_get b i)
let u16 b i = (u8 b i lsl 8) lor u8 b (i + 1)
let u24 b i = (u8 b i lsl 16) lor u16 b (i + 1)
let u32 b i = (u16 b i lsl 16) lor u16 b (i + 2)

(* A 31-bit stream identifier or increment: the top bit is reserved and
   ignored on receipt (§4.1). *)
let u31 b i = u32 b i land 0x7fff_ffff
let has flags flag = flags land flag <> 0

let on_a_stream name stream =
  if stream = 0 then connection_error Protocol_error (name ^ " on stream 0")

let on_the_connection name stream =
  if stream <> 0 then
    connection_error Protocol_error (name ^ " on a stream other than 0")

let priority_at b i =
  let word = u32 b i in
  {
    exclusive = word land 0x8000_0000 <> 0;
    depends_on = word land 0x7fff_ffff;
    weight = u8 b (i + 4) + 1;
  }

(* Strips the padding of a PADDED frame whose payload is [len] bytes at [p]:
   returns the pad length and where the content starts and how long it is,
   [fixed] being the bytes of fields before the content (a HEADERS'
   priority, a PUSH_PROMISE's promised stream). *)
let unpad name b p len ~padded ~fixed =
  if not padded then (None, p, len)
  else begin
    if len < 1 then connection_error Frame_size_error (name ^ " too short for its padding");
    let pad = u8 b p in
    if pad >= len - fixed then
      connection_error Protocol_error (name ^ " padding as long as the payload");
    for i = p + len - pad to p + len - 1 do
      if Bytes.unsafe_get b i <> '\000' then
        connection_error Protocol_error (name ^ " padding not zero")
    done;
    (Some pad, p + 1, len - 1 - pad)
  end
[@@ocamlformat "disable"]

let slice b off len = { bytes = b; off; len }

let settings_frame b p len ~flags =
  if has flags ack_flag then
    if len <> 0 then
      connection_error Frame_size_error
        "SETTINGS acknowledgement with a payload"
    else Settings_ack
  else if len mod 6 <> 0 then
    connection_error Frame_size_error "SETTINGS length not a multiple of 6"
  else
    let rec params i acc =
      if i >= p + len then List.rev acc
      else
        match Settings.of_wire (u16 b i) (u32 b (i + 2)) with
        | Ok (Some s) -> params (i + 6) (s :: acc)
        | Ok None -> params (i + 6) acc
        | Error v -> raise_notrace (Refused v)
    in
    Settings (params p [])

let frame_of b p len ~frame_type ~flags ~stream =
  match frame_type with
  | 0x0 ->
      on_a_stream "DATA" stream;
      let pad_length, p, len =
        unpad "DATA" b p len ~padded:(has flags padded_flag) ~fixed:0
      in
      Data
        {
          stream;
          end_stream = has flags end_stream_flag;
          data = slice b p len;
          pad_length;
        }
  | 0x1 ->
      on_a_stream "HEADERS" stream;
      let prioritised = has flags priority_flag in
      let fixed = if prioritised then 5 else 0 in
      let pad_length, p, len =
        unpad "HEADERS" b p len ~padded:(has flags padded_flag) ~fixed
      in
      if len < fixed then
        connection_error Frame_size_error "HEADERS too short for its priority";
      Headers
        {
          stream;
          end_stream = has flags end_stream_flag;
          end_headers = has flags end_headers_flag;
          priority = (if prioritised then Some (priority_at b p) else None);
          fragment = slice b (p + fixed) (len - fixed);
          pad_length;
        }
  | 0x2 ->
      on_a_stream "PRIORITY" stream;
      if len <> 5 then
        stream_error stream Frame_size_error "PRIORITY not of 5 bytes";
      let priority = priority_at b p in
      if priority.depends_on = stream then
        stream_error stream Protocol_error "stream depends on itself";
      Priority { stream; priority }
  | 0x3 ->
      on_a_stream "RST_STREAM" stream;
      if len <> 4 then
        connection_error Frame_size_error "RST_STREAM not of 4 bytes";
      Rst_stream { stream; code = Error_code.of_int (u32 b p) }
  | 0x4 ->
      on_the_connection "SETTINGS" stream;
      settings_frame b p len ~flags
  | 0x5 ->
      on_a_stream "PUSH_PROMISE" stream;
      let pad_length, p, len =
        unpad "PUSH_PROMISE" b p len ~padded:(has flags padded_flag) ~fixed:4
      in
      if len < 4 then connection_error Frame_size_error "PUSH_PROMISE too short";
      Push_promise
        {
          stream;
          end_headers = has flags end_headers_flag;
          promised_stream = u31 b p;
          fragment = slice b (p + 4) (len - 4);
          pad_length;
        }
  | 0x6 ->
      on_the_connection "PING" stream;
      if len <> 8 then connection_error Frame_size_error "PING not of 8 bytes";
      Ping { ack = has flags ack_flag; data = Bytes.sub_string b p 8 }
  | 0x7 ->
      on_the_connection "GOAWAY" stream;
      if len < 8 then connection_error Frame_size_error "GOAWAY too short";
      Goaway
        {
          last_stream = u31 b p;
          code = Error_code.of_int (u32 b (p + 4));
          debug = Bytes.sub_string b (p + 8) (len - 8);
        }
  | 0x8 ->
      if len <> 4 then
        connection_error Frame_size_error "WINDOW_UPDATE not of 4 bytes";
      let increment = u31 b p in
      if increment = 0 then
        if stream = 0 then connection_error Protocol_error "WINDOW_UPDATE of 0"
        else stream_error stream Protocol_error "WINDOW_UPDATE of 0";
      Window_update { stream; increment }
  | 0x9 ->
      on_a_stream "CONTINUATION" stream;
      Continuation
        {
          stream;
          end_headers = has flags end_headers_flag;
          fragment = slice b p len;
        }
  | frame_type -> Unknown { frame_type; flags; stream; payload = slice b p len }

let parse ~max_frame_size b off len =
  if off < 0 || len < 0 || off > Bytes.length b - len then
    invalid_arg "Frame.parse";
  if len < frame_header_length then Need_more frame_header_length
  else
    let length = u24 b off in
    let size = frame_header_length + length in
    if length > max_frame_size then
      Invalid
        ( Connection_error
            {
              code = Frame_size_error;
              reason = "frame above SETTINGS_MAX_FRAME_SIZE";
            },
          size )
    else if len < size then Need_more size
    else
      match
        frame_of b
          (off + frame_header_length)
          length
          ~frame_type:(u8 b (off + 3))
          ~flags:(u8 b (off + 4))
          ~stream:(u31 b (off + 5))
      with
      | frame -> Frame (frame, size)
      | exception Refused violation -> Invalid (violation, size)

(* {1 Writing} *)

let add_u8 b n = Buffer.add_uint8 b (n land 0xff)
let add_u32 b n = Buffer.add_int32_be b (Int32.of_int (n land 0xffff_ffff))

let add_header b ~length ~frame_type ~flags ~stream =
  if length < 0 || length > 0xff_ffff then
    invalid_arg "Frame.write: payload longer than 2^24-1";
  if stream < 0 || stream > 0x7fff_ffff then
    invalid_arg "Frame.write: stream identifier out of range";
  add_u8 b (length lsr 16);
  Buffer.add_uint16_be b (length land 0xffff);
  add_u8 b frame_type;
  add_u8 b flags;
  add_u32 b stream

let check_pad = function
  | Some n when n < 0 || n > 255 -> invalid_arg "Frame.write: pad length"
  | _ -> ()

let add_padded b pad_length content =
  (match pad_length with Some n -> add_u8 b n | None -> ());
  content ();
  match pad_length with
  | Some n -> Buffer.add_string b (String.make n '\000')
  | None -> ()

let add_payload b p = Buffer.add_subbytes b p.bytes p.off p.len

let add_priority b { exclusive; depends_on; weight } =
  if weight < 1 || weight > 256 then invalid_arg "Frame.write: weight";
  if depends_on < 0 || depends_on > 0x7fff_ffff then
    invalid_arg "Frame.write: dependency";
  add_u32 b (if exclusive then depends_on lor 0x8000_0000 else depends_on);
  add_u8 b (weight - 1)

let flag cond f = if cond then f else 0
let padded pad_length = flag (pad_length <> None) padded_flag

let write b = function
  | Data { stream; end_stream; data; pad_length } ->
      check_pad pad_length;
      add_header b
        ~length:(data.len + padding_overhead pad_length)
        ~frame_type:data_type
        ~flags:(flag end_stream end_stream_flag lor padded pad_length)
        ~stream;
      add_padded b pad_length (fun () -> add_payload b data)
  | Headers { stream; end_stream; end_headers; priority; fragment; pad_length }
    ->
      check_pad pad_length;
      let fixed = if priority = None then 0 else 5 in
      add_header b
        ~length:(fixed + fragment.len + padding_overhead pad_length)
        ~frame_type:headers_type
        ~flags:
          (flag end_stream end_stream_flag
          lor flag end_headers end_headers_flag
          lor flag (priority <> None) priority_flag
          lor padded pad_length)
        ~stream;
      add_padded b pad_length (fun () ->
          Option.iter (add_priority b) priority;
          add_payload b fragment)
  | Priority { stream; priority } ->
      add_header b ~length:5 ~frame_type:priority_type ~flags:0 ~stream;
      add_priority b priority
  | Rst_stream { stream; code } ->
      add_header b ~length:4 ~frame_type:rst_stream_type ~flags:0 ~stream;
      add_u32 b (Error_code.to_int code)
  | Settings settings ->
      add_header b
        ~length:(6 * List.length settings)
        ~frame_type:settings_type ~flags:0 ~stream:0;
      List.iter
        (fun s ->
          Buffer.add_uint16_be b (Settings.identifier s);
          add_u32 b (Settings.value s))
        settings
  | Settings_ack ->
      add_header b ~length:0 ~frame_type:settings_type ~flags:ack_flag ~stream:0
  | Push_promise { stream; end_headers; promised_stream; fragment; pad_length }
    ->
      check_pad pad_length;
      if promised_stream < 0 || promised_stream > 0x7fff_ffff then
        invalid_arg "Frame.write: promised stream";
      add_header b
        ~length:(4 + fragment.len + padding_overhead pad_length)
        ~frame_type:push_promise_type
        ~flags:(flag end_headers end_headers_flag lor padded pad_length)
        ~stream;
      add_padded b pad_length (fun () ->
          add_u32 b promised_stream;
          add_payload b fragment)
  | Ping { ack; data } ->
      if String.length data <> 8 then invalid_arg "Frame.write: PING data";
      add_header b ~length:8 ~frame_type:ping_type ~flags:(flag ack ack_flag)
        ~stream:0;
      Buffer.add_string b data
  | Goaway { last_stream; code; debug } ->
      if last_stream < 0 || last_stream > 0x7fff_ffff then
        invalid_arg "Frame.write: last stream";
      add_header b
        ~length:(8 + String.length debug)
        ~frame_type:goaway_type ~flags:0 ~stream:0;
      add_u32 b last_stream;
      add_u32 b (Error_code.to_int code);
      Buffer.add_string b debug
  | Window_update { stream; increment } ->
      if increment < 1 || increment > 0x7fff_ffff then
        invalid_arg "Frame.write: window increment";
      add_header b ~length:4 ~frame_type:window_update_type ~flags:0 ~stream;
      add_u32 b increment
  | Continuation { stream; end_headers; fragment } ->
      add_header b ~length:fragment.len ~frame_type:continuation_type
        ~flags:(flag end_headers end_headers_flag)
        ~stream;
      add_payload b fragment
  | Unknown { frame_type; flags; stream; payload } ->
      add_header b ~length:payload.len ~frame_type ~flags ~stream;
      add_payload b payload

let write_field_block b ~max_frame_size ~stream ~end_stream ?priority block =
  let fixed = if priority = None then 0 else 5 in
  if max_frame_size <= fixed then
    invalid_arg "Frame.write_field_block: max_frame_size";
  let bytes = Bytes.unsafe_of_string block and total = String.length block in
  let first = min (max_frame_size - fixed) total in
  write b
    (Headers
       {
         stream;
         end_stream;
         end_headers = first = total;
         priority;
         fragment = slice bytes 0 first;
         pad_length = None;
       });
  let rec rest off =
    if off < total then (
      let len = min max_frame_size (total - off) in
      write b
        (Continuation
           {
             stream;
             end_headers = off + len = total;
             fragment = slice bytes off len;
           });
      rest (off + len))
  in
  rest first

(* {1 Printing} *)

let pp_payload ppf p = Format.fprintf ppf "%S" (payload_to_string p)

let pp_pad ppf = function
  | None -> ()
  | Some n -> Format.fprintf ppf " pad=%d" n

let pp_priority ppf = function
  | None -> ()
  | Some { exclusive; depends_on; weight } ->
      Format.fprintf ppf " depends_on=%d%s weight=%d" depends_on
        (if exclusive then " exclusive" else "")
        weight

let pp_flag name ppf on = if on then Format.fprintf ppf " %s" name

let pp ppf = function
  | Data { stream; end_stream; data; pad_length } ->
      Format.fprintf ppf "DATA stream=%d%a%a %a" stream (pp_flag "END_STREAM")
        end_stream pp_pad pad_length pp_payload data
  | Headers { stream; end_stream; end_headers; priority; fragment; pad_length }
    ->
      Format.fprintf ppf "HEADERS stream=%d%a%a%a%a %a" stream
        (pp_flag "END_STREAM") end_stream (pp_flag "END_HEADERS") end_headers
        pp_priority priority pp_pad pad_length pp_payload fragment
  | Priority { stream; priority } ->
      Format.fprintf ppf "PRIORITY stream=%d%a" stream pp_priority
        (Some priority)
  | Rst_stream { stream; code } ->
      Format.fprintf ppf "RST_STREAM stream=%d %a" stream Error_code.pp code
  | Settings settings ->
      Format.fprintf ppf "SETTINGS [%a]"
        (Format.pp_print_list
           ~pp_sep:(fun ppf () -> Format.pp_print_string ppf "; ")
           Settings.pp_setting)
        settings
  | Settings_ack -> Format.pp_print_string ppf "SETTINGS ACK"
  | Push_promise { stream; end_headers; promised_stream; fragment; pad_length }
    ->
      Format.fprintf ppf "PUSH_PROMISE stream=%d promised=%d%a%a %a" stream
        promised_stream (pp_flag "END_HEADERS") end_headers pp_pad pad_length
        pp_payload fragment
  | Ping { ack; data } ->
      Format.fprintf ppf "PING%a %S" (pp_flag "ACK") ack data
  | Goaway { last_stream; code; debug } ->
      Format.fprintf ppf "GOAWAY last_stream=%d %a %S" last_stream Error_code.pp
        code debug
  | Window_update { stream; increment } ->
      Format.fprintf ppf "WINDOW_UPDATE stream=%d increment=%d" stream increment
  | Continuation { stream; end_headers; fragment } ->
      Format.fprintf ppf "CONTINUATION stream=%d%a %a" stream
        (pp_flag "END_HEADERS") end_headers pp_payload fragment
  | Unknown { frame_type; flags; stream; payload } ->
      Format.fprintf ppf "UNKNOWN type=0x%x flags=0x%x stream=%d %a" frame_type
        flags stream pp_payload payload
