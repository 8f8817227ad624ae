(* WebSocket (RFC 6455), server side, over an upgraded connection. *)

open Braid_http.Websocket_codec

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
    invalid_arg "Braid_web.Websocket: limits too small";
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
      ("Braid_web.Websocket." ^ name
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
      (Printf.sprintf "Braid_web.Websocket.%s: %d bytes, more than %d" name len
         t.limits.max_message)

let send_text t s =
  check_domain t "send_text";
  check_size t "send_text" (String.length s);
  if not (Utf8.is_valid s) then
    invalid_arg "Braid_web.Websocket.send_text: not UTF-8";
  send_frame t Text s

let send_binary t s =
  check_domain t "send_binary";
  check_size t "send_binary" (String.length s);
  send_frame t Binary s

let ping ?(payload = "") t =
  check_domain t "ping";
  if String.length payload > 125 then
    invalid_arg "Braid_web.Websocket.ping: more than 125 bytes";
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
    invalid_arg (Printf.sprintf "Braid_web.Websocket.%s: code %d" name code);
  if String.length reason > 123 || not (Utf8.is_valid reason) then
    invalid_arg
      ("Braid_web.Websocket." ^ name
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
    invalid_arg "Braid_web.Websocket.receive: another fiber is receiving";
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

(* {2 Origins}

   A browser sends its page's origin with every WebSocket handshake, and no
   same-origin rule stops a page of another site from opening one with the
   user's cookies (cross-site WebSocket hijacking): the server must look. A
   client that is not a browser sends none, and is not the threat. *)

type origins = Same_origin | Any | Only of string list

let origin_allowed origins (r : Handler.request) =
  match Braid_http.Headers.find_all r.head.headers "origin" with
  | [] -> true
  | [ origin ] -> (
      let origin = String.trim origin in
      match origins with
      | Any -> true
      | Only allowed ->
          List.exists
            (fun a ->
              String.equal (String.lowercase_ascii a)
                (String.lowercase_ascii origin))
            allowed
      | Same_origin -> (
          match header r "host" with
          | Some host -> Origin.same_origin ~host origin
          | None -> false))
  | _ :: _ :: _ -> false

let accept ?limits ?(protocols = fun _ -> None) ?(headers = [])
    ?(origins = Same_origin) (r : Handler.request) f =
  match handshake_error r with
  | Some response -> response
  | None when not (origin_allowed origins r) ->
      Response.error 403 "WebSocket handshake from another origin"
  | None ->
      let offered = offered_protocols r in
      let chosen = if offered = [] then None else protocols offered in
      (match chosen with
      | Some p when not (List.mem p offered) ->
          invalid_arg
            (Printf.sprintf
               "Braid_web.Websocket.accept: %S is not among the offered \
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

let rec until_closed t =
  match receive t with
  | `Close (code, reason) -> (code, reason)
  | `Text _ | `Binary _ -> until_closed t
