(* The WebSocket protocol (RFC 6455) without I/O: the handshake key, frames,
   UTF-8 checking of text, close codes. *)

(* {1 The handshake key} *)

let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

let accept_key key =
  Base64.encode_string (Sha1.to_bin (Sha1.string (key ^ guid)))

(* {1 UTF-8} *)

module Utf8 = struct
  (* The state between bytes: how many continuation bytes are still due
     (bits 16 and up), and the range the next one must fall in (bits 8-15:
     the lowest, bits 0-7: the highest), which is narrower than 80-BF after
     E0, ED, F0 and F4: no overlong forms, no surrogates, nothing past
     U+10FFFF (RFC 3629 §4). *)
  type state = int

  let start = 0
  let invalid = -1
  let cont lo hi need = (need lsl 16) lor (lo lsl 8) lor hi

  let step state byte =
    if state = 0 then
      if byte < 0x80 then 0
      else if byte < 0xC2 then invalid
      else if byte < 0xE0 then cont 0x80 0xBF 1
      else if byte = 0xE0 then cont 0xA0 0xBF 2
      else if byte = 0xED then cont 0x80 0x9F 2
      else if byte < 0xF0 then cont 0x80 0xBF 2
      else if byte = 0xF0 then cont 0x90 0xBF 3
      else if byte < 0xF4 then cont 0x80 0xBF 3
      else if byte = 0xF4 then cont 0x80 0x8F 3
      else invalid
    else
      let lo = (state lsr 8) land 0xFF and hi = state land 0xFF in
      if byte < lo || byte > hi then invalid
      else
        let need = (state lsr 16) - 1 in
        if need = 0 then 0 else cont 0x80 0xBF need

  let feed_sub state s off len =
    let rec go state i =
      if i = off + len || state = invalid then state
      else go (step state (Char.code (String.unsafe_get s i))) (i + 1)
    in
    (* ASCII runs, the common case, stay in state 0. *)
    go state off

  let feed state s = feed_sub state s 0 (String.length s)
  let is_invalid state = state = invalid
  let is_complete state = state = 0
  let is_valid s = is_complete (feed start s)
end

(* {1 Frames} *)

module Frame = struct
  type opcode =
    | Continuation
    | Text
    | Binary
    | Close
    | Ping
    | Pong
    | Reserved of int

  let opcode_of_int = function
    | 0 -> Continuation
    | 1 -> Text
    | 2 -> Binary
    | 8 -> Close
    | 9 -> Ping
    | 10 -> Pong
    | n -> Reserved n

  let int_of_opcode = function
    | Continuation -> 0
    | Text -> 1
    | Binary -> 2
    | Close -> 8
    | Ping -> 9
    | Pong -> 10
    | Reserved n -> n land 0xF

  let is_control op = int_of_opcode op land 8 <> 0

  type header = {
    fin : bool;
    rsv : int;
    opcode : opcode;
    mask : string option;
    length : int;
  }

  type parsed = Header of header * int | Need_more | Invalid of string

  let parse_header b off len =
    if len < 2 then Need_more
    else
      let b0 = Char.code (Bytes.get b off)
      and b1 = Char.code (Bytes.get b (off + 1)) in
      let masked = b1 land 0x80 <> 0 and len7 = b1 land 0x7F in
      let extra = if len7 = 126 then 2 else if len7 = 127 then 8 else 0 in
      let size = 2 + extra + if masked then 4 else 0 in
      if len < size then Need_more
      else
        let length =
          if len7 < 126 then Ok len7
          else if len7 = 126 then Ok (Bytes.get_uint16_be b (off + 2))
          else
            let l = Bytes.get_int64_be b (off + 2) in
            (* The most significant bit must be 0 (RFC 6455 §5.2); beyond
               OCaml's 62 bits no limit could allow it anyway. *)
            if
              Int64.compare l 0L < 0
              || Int64.compare l (Int64.of_int max_int) > 0
            then Error "a 64-bit length with its top bit set"
            else Ok (Int64.to_int l)
        in
        match length with
        | Error e -> Invalid e
        | Ok length ->
            let mask =
              if masked then Some (Bytes.sub_string b (off + 2 + extra) 4)
              else None
            in
            Header
              ( {
                  fin = b0 land 0x80 <> 0;
                  rsv = (b0 lsr 4) land 7;
                  opcode = opcode_of_int (b0 land 0xF);
                  mask;
                  length;
                },
                size )

  let apply_mask ~mask ?(start = 0) b off len =
    if String.length mask <> 4 then
      invalid_arg "Websocket_codec.Frame.apply_mask";
    if off < 0 || len < 0 || off > Bytes.length b - len then
      invalid_arg "Websocket_codec.Frame.apply_mask";
    (* Eight bytes at a time: the key, from [start], repeats every four. *)
    let i = ref 0 in
    (if len >= 8 then
       let word =
         Bytes.get_int64_le
           (Bytes.init 8 (fun k -> mask.[(start + k) land 3]))
           0
       in
       while !i + 8 <= len do
         let j = off + !i in
         Bytes.set_int64_le b j (Int64.logxor (Bytes.get_int64_le b j) word);
         i := !i + 8
       done);
    for i = !i to len - 1 do
      let j = off + i in
      Bytes.unsafe_set b j
        (Char.unsafe_chr
           (Char.code (Bytes.unsafe_get b j)
           lxor Char.code (String.unsafe_get mask ((start + i) land 3))))
    done

  let serialize ?mask ?(fin = true) ?(rsv = 0) opcode payload =
    let len = String.length payload in
    let extra = if len < 126 then 0 else if len < 65536 then 2 else 8 in
    let mask_len = match mask with Some _ -> 4 | None -> 0 in
    let head = 2 + extra + mask_len in
    let b = Bytes.create (head + len) in
    Bytes.set_uint8 b 0
      ((if fin then 0x80 else 0)
      lor ((rsv land 7) lsl 4)
      lor int_of_opcode opcode);
    let m = if mask_len > 0 then 0x80 else 0 in
    if extra = 0 then Bytes.set_uint8 b 1 (m lor len)
    else if extra = 2 then (
      Bytes.set_uint8 b 1 (m lor 126);
      Bytes.set_uint16_be b 2 len)
    else (
      Bytes.set_uint8 b 1 (m lor 127);
      Bytes.set_int64_be b 2 (Int64.of_int len));
    Bytes.blit_string payload 0 b head len;
    (match mask with
    | Some k ->
        if String.length k <> 4 then
          invalid_arg "Websocket_codec.Frame.serialize";
        Bytes.blit_string k 0 b (2 + extra) 4;
        apply_mask ~mask:k b head len
    | None -> ());
    Bytes.unsafe_to_string b
end

(* {1 Close codes} *)

(* What a peer may put in a close frame (RFC 6455 §7.4, and the IANA
   registry's 1012-1014). *)
let valid_code code =
  (code >= 1000 && code <= 1003)
  || (code >= 1007 && code <= 1014)
  || (code >= 3000 && code <= 4999)
