(* WebSocket (RFC 6455), server side, over an upgraded connection. *)

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
    if String.length mask <> 4 then invalid_arg "Websocket.Frame.apply_mask";
    if off < 0 || len < 0 || off > Bytes.length b - len then
      invalid_arg "Websocket.Frame.apply_mask";
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
        if String.length k <> 4 then invalid_arg "Websocket.Frame.serialize";
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

(* {1 Connections} *)

type limits = {
  max_frame : int;
  max_message : int;
  idle_timeout : float option;
}

let default_limits =
  { max_frame = 1 lsl 20; max_message = 1 lsl 20; idle_timeout = Some 60. }

type message = [ `Text of string | `Binary of string | `Close of int * string ]

exception Closed

(* A reason to fail the connection: the code and reason sent. *)
exception Fail of int * string
exception Idle

type t = {
  up : Upgraded.t;
  limits : limits;
  protocol : string option;
  domain : Domain.id;
  buf : bytes;  (** Input not yet parsed: [buf.[pos] .. buf.[lim - 1]]. *)
  mutable pos : int;
  mutable lim : int;
  wlock : Braid_sync.Mutex.t;
  mutable close_sent : bool;
  mutable receiving : bool;  (** A fiber is in {!receive}. *)
  mutable broken : bool;  (** A write failed: nothing more can be sent. *)
  mutable closed : (int * string) option;
      (** What {!receive} answers from now on. *)
  message : Buffer.t;  (** The fragments of the message in progress. *)
  mutable kind : Frame.opcode option;  (** Its opcode, while in progress. *)
  mutable utf8 : Utf8.state;
  aborted : (int * string) option Atomic.t;
      (** Set once by {!abort}, from any domain. *)
  writing : Braid.Fiber.Scope.t option Atomic.t;
      (** The scope of the frame being written, for {!abort} to cut. *)
  reading : Braid.Fiber.Scope.t option Atomic.t;
      (** The scope of the {!receive} in progress, for {!abort} to end. *)
}

let of_upgraded ?(limits = default_limits) ?protocol up =
  if limits.max_frame < 125 || limits.max_message < 1 then
    invalid_arg "Braid_server.Websocket: limits too small";
  {
    up;
    limits;
    protocol;
    domain = Domain.self ();
    buf = Bytes.create 4096;
    pos = 0;
    lim = 0;
    wlock = Braid_sync.Mutex.create ();
    close_sent = false;
    receiving = false;
    broken = false;
    closed = None;
    message = Buffer.create 256;
    kind = None;
    utf8 = Utf8.start;
    aborted = Atomic.make None;
    writing = Atomic.make None;
    reading = Atomic.make None;
  }

let protocol t = t.protocol
let peer t = Upgraded.peer t.up

(* {2 Writing} *)

let check_domain t name =
  if not (Domain.self () == t.domain) then
    invalid_arg
      ("Braid_server.Websocket." ^ name
     ^ ": called from another domain than the connection's")

(* Once aborted, only the close frame {!receive} sends may go out. *)
let refused_after_abort t opcode =
  opcode <> Frame.Close && Option.is_some (Atomic.get t.aborted)

(* One frame, whole, under the lock: frames from several fibers never
   interleave. A write that fails, or that {!abort} cuts, leaves the
   connection unusable. The write runs in a scope published in [writing]:
   [abort] sets [aborted] then cancels the scope it finds there, the writer
   publishes its scope then looks at [aborted], so (the atomics being
   sequentially consistent) one of them sees the other. *)
let send_frame t opcode payload =
  Braid_sync.Mutex.protect t.wlock (fun () ->
      if t.close_sent || t.broken || refused_after_abort t opcode then
        raise Closed;
      let frame = Frame.serialize opcode payload in
      if opcode = Frame.Close then t.close_sent <- true;
      Braid.Fiber.Scope.run (fun scope ->
          Atomic.set t.writing (Some scope);
          (* Written out rather than with [Fun.protect], as
             [Upgraded.write_bytes]: it runs per frame. *)
          match
            if refused_after_abort t opcode then raise Closed;
            Upgraded.write t.up frame
          with
          | () -> Atomic.set t.writing None
          | exception e ->
              let bt = Printexc.get_raw_backtrace () in
              Atomic.set t.writing None;
              let e =
                match e with
                | Closed -> e
                | Braid.Cancelled when Braid.Fiber.Scope.is_cancelled scope ->
                    (* Cut by [abort]: part of the frame may have gone. *)
                    t.broken <- true;
                    Closed
                | Braid.Cancelled ->
                    t.broken <- true;
                    e
                | e when Upgraded.failed_io t.up e ->
                    t.broken <- true;
                    Closed
                | e -> e
              in
              Printexc.raise_with_backtrace e bt))

let check_size t name len =
  if len > t.limits.max_message then
    invalid_arg
      (Printf.sprintf "Braid_server.Websocket.%s: %d bytes, more than %d" name
         len t.limits.max_message)

let send_text t s =
  check_domain t "send_text";
  check_size t "send_text" (String.length s);
  if not (Utf8.is_valid s) then
    invalid_arg "Braid_server.Websocket.send_text: not UTF-8";
  send_frame t Text s

let send_binary t s =
  check_domain t "send_binary";
  check_size t "send_binary" (String.length s);
  send_frame t Binary s

let ping ?(payload = "") t =
  check_domain t "ping";
  if String.length payload > 125 then
    invalid_arg "Braid_server.Websocket.ping: more than 125 bytes";
  send_frame t Ping payload

let close_payload code reason =
  let b = Bytes.create (2 + String.length reason) in
  Bytes.set_uint16_be b 0 code;
  Bytes.blit_string reason 0 b 2 (String.length reason);
  Bytes.unsafe_to_string b

(* Sends a close frame unless one was sent or nothing can be. *)
let send_close t payload =
  match send_frame t Close payload with () -> () | exception Closed -> ()

let check_close name code reason =
  if not (valid_code code) then
    invalid_arg (Printf.sprintf "Braid_server.Websocket.%s: code %d" name code);
  if String.length reason > 123 || not (Utf8.is_valid reason) then
    invalid_arg
      ("Braid_server.Websocket." ^ name
     ^ ": the reason is longer than 123 bytes or not UTF-8")

let close ?(code = 1000) ?(reason = "") t =
  check_domain t "close";
  check_close "close" code reason;
  send_close t (close_payload code reason)

(* Any domain: atomics and scope cancellations only. *)
let abort ?(code = 1008) ?(reason = "") t =
  check_close "abort" code reason;
  if Atomic.compare_and_set t.aborted None (Some (code, reason)) then (
    Option.iter Braid.Fiber.Scope.cancel (Atomic.get t.writing);
    Option.iter Braid.Fiber.Scope.cancel (Atomic.get t.reading))

(* {2 Reading} *)

let timed_read t buf off len =
  let read () = Upgraded.read t.up buf off len in
  match t.limits.idle_timeout with
  | None -> read ()
  | Some seconds -> (
      match Services.timeout seconds read with
      | Some n -> n
      | None -> raise Idle)

(* At least [n] (at most 14) bytes in [buf]. *)
let need t n =
  if t.lim - t.pos < n then (
    if t.pos > 0 then (
      Bytes.blit t.buf t.pos t.buf 0 (t.lim - t.pos);
      t.lim <- t.lim - t.pos;
      t.pos <- 0);
    while t.lim < n do
      let got = timed_read t t.buf t.lim (Bytes.length t.buf - t.lim) in
      if got = 0 then raise End_of_file;
      t.lim <- t.lim + got
    done)

(* The payload of a frame: what is buffered, then straight from the
   connection. *)
let read_payload t len =
  let b = Bytes.create len in
  let have = min len (t.lim - t.pos) in
  Bytes.blit t.buf t.pos b 0 have;
  t.pos <- t.pos + have;
  let rec more off =
    if off < len then (
      let got = timed_read t b off (len - off) in
      if got = 0 then raise End_of_file;
      more (off + got))
  in
  more have;
  b

let protocol_error why = raise (Fail (1002, why))

let rec read_header t =
  match Frame.parse_header t.buf t.pos (t.lim - t.pos) with
  | Header (h, size) ->
      t.pos <- t.pos + size;
      h
  | Invalid why -> protocol_error why
  | Need_more ->
      (* The next size that can tell more: 2, then 4, 10 or 14. *)
      let have = t.lim - t.pos in
      (if have < 2 then need t 2
       else
         let b1 = Char.code (Bytes.get t.buf (t.pos + 1)) in
         let l7 = b1 land 0x7F in
         need t
           (2
           + (if l7 = 126 then 2 else if l7 = 127 then 8 else 0)
           + if b1 land 0x80 <> 0 then 4 else 0));
      read_header t

(* The next frame, checked: what RFC 6455 §5 requires of a client's. *)
let read_frame t =
  let h = read_header t in
  if h.rsv <> 0 then protocol_error "reserved bits set";
  (match h.opcode with
  | Reserved n -> protocol_error (Printf.sprintf "unknown opcode %d" n)
  | _ -> ());
  if Frame.is_control h.opcode then (
    if not h.fin then protocol_error "fragmented control frame";
    if h.length > 125 then protocol_error "control frame over 125 bytes");
  let mask =
    match h.mask with Some m -> m | None -> protocol_error "unmasked frame"
  in
  if h.length > t.limits.max_frame then raise (Fail (1009, "frame too big"));
  let payload = read_payload t h.length in
  Frame.apply_mask ~mask payload 0 h.length;
  (h, Bytes.unsafe_to_string payload)

(* Fails the connection: the close frame goes out (if it can), and
   [receive] answers [`Close (code, reason)] from now on. *)
let fail t code reason =
  send_close t (close_payload code reason);
  t.closed <- Some (code, reason);
  `Close (code, reason)

let peer_close t payload =
  let len = String.length payload in
  if len = 1 then raise (Fail (1002, "a close frame of one byte"));
  let code, reason =
    if len = 0 then (1005, "")
    else (String.get_uint16_be payload 0, String.sub payload 2 (len - 2))
  in
  if len > 0 && not (valid_code code) then
    raise (Fail (1002, Printf.sprintf "close code %d" code));
  if not (Utf8.is_valid reason) then
    raise (Fail (1007, "close reason not UTF-8"));
  (* Echo the code (RFC 6455 §5.5.1), then the server closes first. *)
  send_close t (if len = 0 then "" else close_payload code "");
  t.closed <- Some (code, reason);
  `Close (code, reason)

let data t (h : Frame.header) payload =
  (match (h.opcode, t.kind) with
  | Continuation, None -> protocol_error "continuation of no message"
  | (Text | Binary), Some _ -> protocol_error "a new message inside a message"
  | Continuation, Some _ -> ()
  | ((Text | Binary) as op), None ->
      t.kind <- Some op;
      t.utf8 <- Utf8.start;
      Buffer.clear t.message
  | _ -> ());
  let len = String.length payload in
  if Buffer.length t.message + len > t.limits.max_message then
    raise (Fail (1009, "message too big"));
  Buffer.add_string t.message payload;
  (* Checked fragment by fragment: an invalid prefix fails at once. *)
  if t.kind = Some Text then (
    t.utf8 <- Utf8.feed t.utf8 payload;
    if Utf8.is_invalid t.utf8 then raise (Fail (1007, "text not UTF-8")));
  if not h.fin then None
  else
    let kind = t.kind in
    t.kind <- None;
    let s = Buffer.contents t.message in
    (* A large message's buffer is not kept. *)
    if Buffer.length t.message > 65536 then Buffer.reset t.message
    else Buffer.clear t.message;
    match kind with
    | Some Text ->
        if not (Utf8.is_complete t.utf8) then
          raise (Fail (1007, "text not UTF-8"));
        Some (`Text s)
    | _ -> Some (`Binary s)

let rec next_message t =
  match t.closed with
  | Some (code, reason) -> `Close (code, reason)
  | None -> (
      match read_frame t with
      | exception Fail (code, reason) -> fail t code reason
      | exception Idle -> fail t 1001 "idle timeout"
      | exception Upgraded.Shutdown -> fail t 1001 "server shutting down"
      | exception End_of_file ->
          t.closed <- Some (1006, "");
          `Close (1006, "")
      | exception e when Upgraded.failed_io t.up e ->
          t.closed <- Some (1006, "");
          `Close (1006, "")
      | h, payload -> (
          match h.opcode with
          | Ping ->
              (match send_frame t Pong payload with
              | () -> ()
              | exception Closed -> ());
              next_message t
          | Pong -> next_message t
          | Close -> (
              match peer_close t payload with
              | v -> v
              | exception Fail (code, reason) -> fail t code reason)
          | _ -> (
              match data t h payload with
              | exception Fail (code, reason) -> fail t code reason
              | None -> next_message t
              | Some _ when t.close_sent ->
                  (* Closing: messages are dropped until the peer's close. *)
                  next_message t
              | Some m -> (m :> message))))

(* After {!abort}: the close frame, unless a cut frame makes it impossible,
   and [`Close (code, reason)] from now on. Outside the cancelled scope, so
   that the close frame's write is not interrupted at once. *)
let aborted_close t (code, reason) =
  match t.closed with
  | Some c -> `Close c
  | None ->
      t.closed <- Some (code, reason);
      send_close t (close_payload code reason);
      `Close (code, reason)

(* [next_message] in a scope published in [reading], as [send_frame]'s. *)
let receive t =
  if t.receiving then
    invalid_arg "Braid_server.Websocket.receive: another fiber is receiving";
  t.receiving <- true;
  Fun.protect
    ~finally:(fun () ->
      Atomic.set t.reading None;
      t.receiving <- false)
    (fun () ->
      let outcome =
        Braid.Fiber.Scope.run (fun scope ->
            Atomic.set t.reading (Some scope);
            match Atomic.get t.aborted with
            | Some _ when t.closed = None -> None
            | _ -> (
                match next_message t with
                | m -> Some m
                | exception Braid.Cancelled
                  when Braid.Fiber.Scope.is_cancelled scope ->
                    None))
      in
      match outcome with
      | Some m -> m
      | None -> aborted_close t (Option.get (Atomic.get t.aborted)))

(* {1 The handshake} *)

let header (r : Handler.request) name = Braid_http.Request.header r.head name

let offered_protocols (r : Handler.request) =
  Braid_http.Headers.find_all r.head.headers "sec-websocket-protocol"
  |> List.concat_map (String.split_on_char ',')
  |> List.map String.trim
  |> List.filter (fun s -> s <> "")

let valid_key key =
  match Base64.decode ~pad:true key with
  | Ok raw -> String.length raw = 16
  | Error _ -> false

let handshake_error (r : Handler.request) =
  let headers = r.head.headers in
  if r.head.meth <> GET then Some (Response.error 400 "WebSocket needs GET")
  else if r.head.version <> Http_1_1 then
    Some (Response.error 400 "WebSocket needs HTTP/1.1")
  else if
    not
      (Braid_http.Headers.has_token headers "upgrade" "websocket"
      && Braid_http.Headers.has_token headers "connection" "upgrade")
  then
    Some
      (Response.error
         ~headers:[ ("Upgrade", "websocket") ]
         426 "this resource is a WebSocket")
  else if header r "sec-websocket-version" <> Some "13" then
    Some
      (Response.error
         ~headers:[ ("Sec-WebSocket-Version", "13") ]
         426 "WebSocket version 13 only")
  else
    match Braid_http.Headers.find_all headers "sec-websocket-key" with
    | [ key ] when valid_key (String.trim key) -> None
    | _ -> Some (Response.error 400 "bad Sec-WebSocket-Key")

let accept ?limits ?(protocols = fun _ -> None) ?(headers = [])
    (r : Handler.request) f =
  match handshake_error r with
  | Some response -> response
  | None ->
      let offered = offered_protocols r in
      let chosen = if offered = [] then None else protocols offered in
      (match chosen with
      | Some p when not (List.mem p offered) ->
          invalid_arg
            (Printf.sprintf
               "Braid_server.Websocket.accept: %S is not among the offered \
                subprotocols"
               p)
      | _ -> ());
      let key = String.trim (Option.get (header r "sec-websocket-key")) in
      let headers =
        ("Sec-WebSocket-Accept", accept_key key)
        ::
        (match chosen with
        | Some p -> [ ("Sec-WebSocket-Protocol", p) ]
        | None -> [])
        @ headers
      in
      Response.upgrade ~headers ~protocol:"websocket" (fun up ->
          let t = of_upgraded ?limits ?protocol:chosen up in
          match f t with
          | () ->
              (* The application is done: a normal close, if none yet. *)
              if t.closed = None then send_close t (close_payload 1000 "")
          | exception Closed -> ()
          | exception Upgraded.Shutdown ->
              if t.closed = None then
                send_close t (close_payload 1001 "server shutting down")
          | exception (Braid.Cancelled as e) -> raise e
          | exception e ->
              let bt = Printexc.get_raw_backtrace () in
              if not (Upgraded.failed_io up e) then
                send_close t (close_payload 1011 "internal error");
              Printexc.raise_with_backtrace e bt)
