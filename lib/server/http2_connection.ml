open Braid_web
open Braid_web.Private
open Braid_http
module H2 = Braid_http2
module Frame = H2.Frame
module Hpack = H2.Hpack
module Settings = H2.Settings
module Error_code = H2.Error_code

(* {1 Waiting}

   Everything of one connection runs on its loop's domain, so a wait is a
   resumer in a field: no lock. A cancelled waiter is woken by its
   scheduler; the resumer it leaves behind answers [false] when called. *)

type waiter = { mutable resumer : unit Braid.resumer option }

let waiter () = { resumer = None }

let wait w =
  Braid.suspend (fun r ->
      w.resumer <- Some r;
      None)

let wake w =
  match w.resumer with
  | None -> ()
  | Some r ->
      w.resumer <- None;
      ignore (r (Ok ()))

(* Wakes the first waiter of [q] still waiting (a cancelled one is
   skipped), if any. *)
let rec wake_one q =
  match Queue.take_opt q with
  | None -> ()
  | Some w -> (
      match w.resumer with
      | None -> wake_one q
      | Some r ->
          w.resumer <- None;
          if not (r (Ok ())) then wake_one q)

(* {1 Output}

   Frames are appended to [pending] by whichever fiber makes them (never
   blocking: HPACK's encoder must see blocks in the order they go out) and
   written by the connection's writer fiber, which swaps [pending] with
   [spare] and writes all of it in one call: frames of many streams share a
   write. *)

type outbuf = { mutable bytes : bytes; mutable length : int }

(* What a buffer given back while idle starts at again. *)
let first_size = 2048

let reserve o n =
  if o.length + n > Bytes.length o.bytes then (
    let bigger =
      Bytes.create
        (Int.max (o.length + n) (Int.max first_size (2 * Bytes.length o.bytes)))
    in
    Bytes.blit o.bytes 0 bigger 0 o.length;
    o.bytes <- bigger)

let add_buffer o b =
  let n = Buffer.length b in
  reserve o n;
  Buffer.blit b 0 o.bytes o.length n;
  o.length <- o.length + n

(* A frame header (RFC 9113 §4.1) at [p]. *)
let set_frame_header b p ~length ~frame_type ~flags ~stream =
  Bytes.set_uint8 b p (length lsr 16);
  Bytes.set_uint16_be b (p + 1) (length land 0xffff);
  Bytes.set_uint8 b (p + 3) frame_type;
  Bytes.set_uint8 b (p + 4) flags;
  Bytes.set_int32_be b (p + 5) (Int32.of_int stream)

(* The [n] bytes of [buf] from [off] into slots of [piece] bytes a frame
   header apart, from [dst_off]. *)
let scatter buf off dst dst_off ~piece n =
  let rec go i =
    if i < n then (
      let k = Int.min piece (n - i) in
      Bytes.blit buf (off + i) dst
        (dst_off + (i / piece * (piece + Frame.frame_header_length)))
        k;
      go (i + k))
  in
  go 0

(* DATA frames (RFC 9113 §4.1) of [piece] bytes of payload each, the last
   one shorter, carrying [len] bytes in all, one after the other: their
   9-byte headers, then [fill dst dst_off] writes the payloads in place,
   the first at [dst_off], each next one a frame header past the end of the
   one before. No copy in between; one fill for the batch. *)
let add_data_with o ~stream ~end_stream ~piece len fill =
  let frames = if len = 0 then 1 else (len + piece - 1) / piece in
  let header = Frame.frame_header_length in
  reserve o ((frames * header) + len);
  let b = o.bytes and p = o.length in
  for i = 0 to frames - 1 do
    let n = Int.min piece (len - (i * piece)) in
    set_frame_header b
      (p + (i * (header + piece)))
      ~length:n ~frame_type:0x0
      ~flags:(if end_stream && i = frames - 1 then 0x1 else 0)
      ~stream
  done;
  fill b (p + header);
  o.length <- p + (frames * header) + len

let add_data o ~stream ~end_stream ~piece buf off len =
  add_data_with o ~stream ~end_stream ~piece len (fun dst dst_off ->
      scatter buf off dst dst_off ~piece len)

(* Past this much unwritten output, a stream writing more waits for the
   writer: a client that reads slowly holds this much of the server's
   memory, not its responses' size. *)
let high_water = 262_144

(* {1 Streams} *)

(* A piece of request body waiting for the handler, and the flow-control
   credit its reading gives back (the DATA payload it came from; 0 for the
   chunk framing added around it). *)
type piece = { text : string; credit : int }

type stream = {
  id : int;
  pieces : piece Queue.t;
  mutable piece_off : int;
  mutable recv_window : int;  (** Body bytes the client may still send. *)
  mutable unannounced : int;
      (** Read by the handler, not yet given back by WINDOW_UPDATE. *)
  mutable declared_length : int option;
  mutable received : int;
  mutable chunked : bool;
      (** No [content-length]: the body is handed to the request-body reader in
          chunked framing, which it reads to its end. *)
  data_arrived : waiter;
  mutable send_window : int;
  window_opened : waiter;
  mutable remote_closed : bool;  (** END_STREAM received. *)
  mutable response_done : bool;  (** END_STREAM sent. *)
  mutable reset : bool;  (** Reset by either side: reads and writes abort. *)
  mutable discarding : bool;
      (** Answered, its handler gone, and its declared body still coming: the
          DATA is given back and dropped, and checked against the length. *)
  mutable fiber : unit Braid.Fiber.handle option;
}

exception Connection_error of Error_code.t * string

(* Streams by id: hashed and compared as ints, not polymorphically. *)
module Streams = Hashtbl.Make (Int)

type t = {
  c : Pipeline_state.t;
  h : Config.http2;
  decoder : Hpack.Decoder.t;
  encoder : Hpack.Encoder.t;
  streams : stream Streams.t;
  mutable last_client_stream : int;
  mutable running : int;  (** Stream fibers not yet ended. *)
  mutable started : int;
      (** Stream fibers forked since the connection's fiber last let them run
          (see [burst]). *)
  mutable peer : Settings.t;
  mutable send_window : int;
  mutable recv_window : int;
  mutable unannounced : int;
  connection_window : waiter Queue.t;
  mutable pending : outbuf;
  mutable spare : outbuf;
  output_ready : waiter;
  drained : waiter Queue.t;
  turns : waiter Queue.t;
      (** Streams waiting to add a batch of DATA: one is let go per write. *)
  mutable closing : bool;  (** The writer ends once [pending] is empty. *)
  mutable writing : bool;  (** The writer is in a write, of [spare]. *)
  mutable parsing : bool;
      (** The connection's fiber is reading frames it has: the writer waits
          until it needs more input, which wakes it. *)
  mutable going_away : int option;
      (** The last stream of our GOAWAY: later ones are ignored. *)
  mutable peer_going_away : bool;
  streams_done : waiter;
  mutable control_tokens : int;
  mutable reset_tokens : int;
  mutable refilled_at : int;
  mutable recently_reset : int array;
      (** Streams this side reset: frames the client sent before it learnt are
          ignored rather than taken for errors. Made at the first reset: most
          connections never reset one. *)
  mutable recently_reset_next : int;
  (* A field block in progress: HEADERS without END_HEADERS. *)
  mutable block_stream : int;  (** 0: none. *)
  block : Buffer.t;
  mutable block_frames : int;
  mutable block_deadline : int;
      (** Monotonic nanoseconds: the block must be complete by then. *)
  mutable block_end_stream : bool;
  mutable block_self_dependent : bool;
  scratch : Buffer.t;
  dummy_out : Output.t;
  switch : Braid.Switch.t;  (** The connection's: its streams' fibers. *)
}

let max_window = 0x7fff_ffff

(* A field block may come in this many frames at most, take this many
   bytes encoded, and this long ([timeouts.request_header], as an HTTP/1.1
   head): beyond, the client is flooding (CVE-2024-27316) or holding the
   connection, for the block must be held whole until its end to be
   decoded, and no other frame may come between its pieces. The frame count
   is its own limit: empty CONTINUATION frames never reach the byte limit. *)
let max_block_frames = 64
let max_block_bytes t = 2 * t.h.max_header_list_size

let log t level text =
  t.c.services.log (Message { time = t.c.services.now (); level; text })

(* The writer is woken when the connection's fiber has read all it has
   (see [parsing]): the frames made meanwhile, by it and by the stream
   fibers it lets run, share a write. *)
let flush_soon t = if not t.parsing then wake t.output_ready

let add_frame t frame =
  let b = t.scratch in
  Buffer.clear b;
  Frame.write b frame;
  add_buffer t.pending b;
  flush_soon t

let remember_reset t id =
  if Array.length t.recently_reset = 0 then t.recently_reset <- Array.make 64 0;
  t.recently_reset.(t.recently_reset_next) <- id;
  t.recently_reset_next <-
    (t.recently_reset_next + 1) mod Array.length t.recently_reset

let was_reset_here t id = Array.exists (fun i -> i = id) t.recently_reset

(* {2 Budgets}

   Tokens spent by what costs the server work for nothing in return, earned
   back by useful work, and refilled by a tenth of the budget per second of
   the services' clock, read only when a budget runs out. *)

let refill t =
  let now = t.c.services.monotonic_ns () in
  let tenths = (now - t.refilled_at) / 100_000_000 in
  if tenths > 0 then (
    t.refilled_at <- now;
    let gain budget = Int.max 1 (budget * Int.min tenths 1_000 / 100) in
    t.control_tokens <-
      Int.min t.h.control_frame_budget
        (t.control_tokens + gain t.h.control_frame_budget);
    t.reset_tokens <-
      Int.min t.h.reset_budget (t.reset_tokens + gain t.h.reset_budget))

let spend_control t =
  t.control_tokens <- t.control_tokens - 1;
  if t.control_tokens < 0 then (
    refill t;
    if t.control_tokens < 0 then
      raise
        (Connection_error
           (Enhance_your_calm, "too many control frames (SETTINGS, PING, ...)")))

let earn_control t n =
  t.control_tokens <- Int.min t.h.control_frame_budget (t.control_tokens + n)

let spend_reset t =
  t.reset_tokens <- t.reset_tokens - 1;
  if t.reset_tokens < 0 then (
    refill t;
    if t.reset_tokens < 0 then
      raise (Connection_error (Enhance_your_calm, "too many streams reset")))

(* {2 Flow control of request bodies} *)

let give_back_connection t n =
  if n > 0 then (
    t.unannounced <- t.unannounced + n;
    if t.unannounced >= t.h.connection_window / 2 then (
      add_frame t (Window_update { stream = 0; increment = t.unannounced });
      t.recv_window <- t.recv_window + t.unannounced;
      t.unannounced <- 0))

(* The handler read [n] bytes of [st]'s body. *)
let give_back t st n =
  if n > 0 then (
    give_back_connection t n;
    if not (st.remote_closed || st.reset) then (
      st.unannounced <- st.unannounced + n;
      if st.unannounced >= t.h.stream_window / 2 then (
        add_frame t
          (Window_update { stream = st.id; increment = st.unannounced });
        st.recv_window <- st.recv_window + st.unannounced;
        st.unannounced <- 0)))

(* Body nobody will read: its connection credit is given back at once. *)
let discard_body t st =
  let n = Queue.fold (fun n p -> n + p.credit) 0 st.pieces in
  Queue.clear st.pieces;
  give_back_connection t n

(* [st] leaves the table unless another stream of its id took its place.
   (A comparison with [Some st] would compare a fresh block: never equal,
   and every stream stayed in the table for the connection's life.) *)
let forget t st =
  match Streams.find_opt t.streams st.id with
  | Some s when s == st -> Streams.remove t.streams st.id
  | Some _ | None -> ()

(* This side ends [st] with RST_STREAM [code] (a stream error, or a
   response complete before its request). *)
let reset_stream t st code =
  if not st.reset then (
    st.reset <- true;
    add_frame t (Rst_stream { stream = st.id; code });
    remember_reset t st.id;
    discard_body t st;
    wake st.data_arrived;
    wake st.window_opened;
    Option.iter Braid.Fiber.cancel st.fiber;
    if st.fiber = None then forget t st)

(* {2 Reading a request body (the stream's input)} *)

let take_piece t st buf off len =
  let p = Queue.peek st.pieces in
  let n = Int.min len (String.length p.text - st.piece_off) in
  Bytes.blit_string p.text st.piece_off buf off n;
  st.piece_off <- st.piece_off + n;
  if st.piece_off = String.length p.text then (
    ignore (Queue.pop st.pieces);
    st.piece_off <- 0;
    give_back t st p.credit);
  n

(* The stream's input reads with this: it blocks the reading fiber until
   DATA comes, each wait bounded by [timeouts.body]. A reset stream aborts
   the read ([Unwind.Abort], the connection's own: no 500). *)
let rec read_body t st buf off len =
  if st.reset then raise Unwind.Abort
  else if not (Queue.is_empty st.pieces) then take_piece t st buf off len
  else if st.remote_closed then 0
  else
    match
      t.c.services.timeout t.c.config.timeouts.body (fun () ->
          wait st.data_arrived)
    with
    | Some () -> read_body t st buf off len
    | None -> raise Unwind.Timed_out

(* {2 Writing a response} *)

let rec wait_for_writer t =
  if t.pending.length > high_water && not t.closing then (
    let w = waiter () in
    Queue.push w t.drained;
    wait w;
    wait_for_writer t)

(* Past this much unwritten output, a stream's next batch of DATA waits its
   turn: the writer lets one stream go per write. The bytes a batch reads
   from a file then go out while they are still in the cache, rather than
   behind those of every other stream: ten streams of 64 KiB gathered in
   the output cost the kernel's copies two to three times h2o's. *)
let low_water = 131_072

let wait_turn t =
  let w = waiter () in
  Queue.push w t.turns;
  wake t.output_ready;
  wait w

let send_timeout t f =
  match t.c.services.timeout t.c.config.timeouts.send f with
  | Some () -> ()
  | None -> raise Unwind.Timed_out

(* The most payload one batch of DATA frames carries: the frames a file
   response of 64 KiB needs, made at once and filled by one read. *)
let batch = 65_536

(* Sends [len] bytes as DATA frames, as the windows allow, in batches of
   frames whose payloads [fill dst dst_off ~piece ~from n] writes in place
   (the [n] bytes from [from], counted from the start of the [len], into
   slots of [piece] bytes a frame header apart, as [add_data_with] lays
   them out): a closed window suspends this fiber alone, for at most
   [timeouts.send] each time. *)
let rec send_with t st ~from len ~end_stream fill =
  if st.reset || t.closing then raise Unwind.Abort;
  let piece = t.peer.max_frame_size in
  let room = Int.min st.send_window t.send_window in
  if len = 0 then (
    if end_stream then (
      add_data_with t.pending ~stream:st.id ~end_stream ~piece 0 (fun _ _ -> ());
      st.response_done <- true;
      flush_soon t))
  else if room <= 0 then (
    (* Any turn this stream holds goes to another while it waits. *)
    wake_one t.turns;
    (if st.send_window <= 0 then
       send_timeout t (fun () -> wait st.window_opened)
     else
       let w = waiter () in
       Queue.push w t.connection_window;
       send_timeout t (fun () -> wait w));
    send_with t st ~from len ~end_stream fill)
  else if t.pending.length >= low_water then (
    wait_turn t;
    (* A stream let go passes its turn on if it fails before it adds
       output: a write lets the next go. *)
    match send_with t st ~from len ~end_stream fill with
    | () -> ()
    | exception e ->
        wake_one t.turns;
        raise e)
  else
    let n = Int.min room (Int.min len (Int.max piece batch)) in
    let last = end_stream && n = len in
    add_data_with t.pending ~stream:st.id ~end_stream:last ~piece n
      (fun dst dst_off -> fill dst dst_off ~piece ~from n);
    st.send_window <- st.send_window - n;
    t.send_window <- t.send_window - n;
    earn_control t ((n + piece - 1) / piece);
    if last then st.response_done <- true;
    flush_soon t;
    (* Not after the last frame: the client may open another stream as soon
       as it reads END_STREAM, and this one counts against the limit until
       its fiber ends, which it must do before the writer runs. Waiting here
       got such streams refused (REFUSED_STREAM) with 100 streams of 64 KiB
       in flight. One batch past [high_water] per stream at most. *)
    if not last then wait_for_writer t;
    if n < len then send_with t st ~from:(from + n) (len - n) ~end_stream fill

let send_data t st buf off len ~end_stream =
  send_with t st ~from:0 len ~end_stream (fun dst dst_off ~piece ~from n ->
      scatter buf (off + from) dst dst_off ~piece n)

(* Fields HTTP/2 forbids (RFC 9113 §8.2.2), and those the framing owns. *)
let connection_specific = function
  | "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding"
  | "upgrade" ->
      true
  | _ -> false

(* [name] lowercased: a constant for the names the server's own responses
   use (the static files' four took a copy each per response), else itself
   when it already is. *)
let lowercase = function
  | "Content-Type" -> "content-type"
  | "Accept-Ranges" -> "accept-ranges"
  | "ETag" -> "etag"
  | "Last-Modified" -> "last-modified"
  | "Content-Length" -> "content-length"
  | "Cache-Control" -> "cache-control"
  | "Content-Encoding" -> "content-encoding"
  | "Content-Range" -> "content-range"
  | "Location" -> "location"
  | "Set-Cookie" -> "set-cookie"
  | "Vary" -> "vary"
  | "Date" -> "date"
  | name ->
      if String.exists (fun c -> c >= 'A' && c <= 'Z') name then
        String.lowercase_ascii name
      else name

(* Decimal digits without Printf (string_of_int goes through C's printf,
   which took a tenth of the response head's cost). *)
let decimal n =
  if n < 0 then string_of_int n
  else
    let rec digits n k = if n < 10 then k else digits (n / 10) (k + 1) in
    let len = digits n 1 in
    let b = Bytes.create len in
    let rec fill n i =
      Bytes.unsafe_set b i (Char.unsafe_chr (48 + (n mod 10)));
      if i > 0 then fill (n / 10) (i - 1)
    in
    fill n (len - 1);
    Bytes.unsafe_to_string b

(* The common statuses as constants: HPACK's static table indexes
   200, 204, 206, 304, 400, 404 and 500 whole. *)
let status_text = function
  | 200 -> "200"
  | 204 -> "204"
  | 206 -> "206"
  | 304 -> "304"
  | 400 -> "400"
  | 404 -> "404"
  | 500 -> "500"
  | n -> decimal n

let send_head t st ~now ~status ~headers ~length ~end_stream =
  let fields =
    List.fold_right
      (fun (name, value) acc ->
        let name = lowercase name in
        if connection_specific name || name = "content-length" || name = "date"
        then acc
        else (name, value) :: acc)
      headers []
  in
  let fields =
    match length with
    | Some n when not (Status.has_no_body status) ->
        ("content-length", decimal n) :: fields
    | _ -> fields
  in
  let fields =
    (":status", status_text status)
    :: ("date", Head_cache.http_date t.c.dates now)
    :: fields
  in
  (* The block is encoded into the encoder's buffer and copied once, behind
     its frame header, into [pending]; past one frame (rare: more than
     [max_frame_size] bytes of fields) it goes out as HEADERS and
     CONTINUATIONs. *)
  Hpack.Encoder.encode_with t.encoder fields (fun block off len ->
      if len <= t.peer.max_frame_size then (
        let o = t.pending in
        reserve o (Frame.frame_header_length + len);
        set_frame_header o.bytes o.length ~length:len ~frame_type:0x1
          ~flags:(0x4 lor if end_stream then 0x1 else 0)
          ~stream:st.id;
        Bytes.blit block off o.bytes (o.length + Frame.frame_header_length) len;
        o.length <- o.length + Frame.frame_header_length + len)
      else
        let b = t.scratch in
        Buffer.clear b;
        Frame.write_field_block b ~max_frame_size:t.peer.max_frame_size
          ~stream:st.id ~end_stream
          (Bytes.sub_string block off len);
        add_buffer t.pending b);
  if end_stream then st.response_done <- true;
  flush_soon t

let file_piece = 16_384

exception File_shrank

(* pread(2) into the bytes themselves (pread_stubs.c), into slots a frame
   header apart: without releasing the runtime lock for what the page cache
   holds, with it (through a buffer of its own) for what must come from the
   disk. No seek: a descriptor shared by streams keeps no position of
   theirs. *)
external pread_slots :
  Unix.file_descr -> bytes -> int -> int -> int -> int -> int
  = "braid_pread_slots_bytecode" "braid_pread_slots"

(* [n] bytes of [fd] from [offset] into [dst] at [dst_off]: one slot as
   large as what is left. *)
let read_exactly fd ~offset dst dst_off n =
  let rec go offset off n =
    if n > 0 then
      match pread_slots fd dst off n n offset with
      | 0 -> raise File_shrank
      | got -> go (offset + got) (off + got) (n - got)
  in
  go offset dst_off n

(* [n] bytes of [fd] from [offset] into slots of [piece] bytes a frame
   header apart, from [dst_off] (the payloads of a batch of DATA frames):
   one system call for the batch, unless it comes back short (the end of
   the file, or pages not in the cache). *)
let rec read_slots fd ~offset dst dst_off ~piece n =
  let gap = Frame.frame_header_length in
  let frames = (n + piece - 1) / piece in
  if
    n < 0 || piece <= 0 || dst_off < 0
    || dst_off + ((frames - 1) * (piece + gap)) + n - ((frames - 1) * piece)
       > Bytes.length dst
  then invalid_arg "Http2_connection.read_slots";
  if n > 0 then
    match pread_slots fd dst dst_off piece n offset with
    | 0 -> raise File_shrank
    | got when got < n ->
        (* The slot it stopped in, read to its end; then the rest. *)
        let slot = dst_off + (got / piece * (piece + gap)) in
        let within = got mod piece in
        let rest = Int.min (piece - within) (n - got) in
        read_exactly fd ~offset:(offset + got) dst (slot + within) rest;
        read_slots fd
          ~offset:(offset + got + rest)
          dst
          (slot + piece + gap)
          ~piece
          (n - got - rest)
    | _ -> ()

(* A file's region read into DATA frames: over HTTP/2 the bytes must be
   framed (and, over TLS, encrypted), so sendfile(2) cannot send them. A
   file with a descriptor is read on the loop, straight into the frames
   going out: as sendfile(2) reads it on the loop for HTTP/1.1 (a cold page
   waits the same there), where a round trip to the blocking pool for each
   piece cost more than the rest of the response (a 64 KiB file: 107 us of
   server CPU per request, most of it threads waking each other). *)
let send_file t st (contents : File.contents) ~offset ~length =
  match contents with
  | In_memory s ->
      send_data t st (Bytes.unsafe_of_string s) offset length ~end_stream:true
  | Reader { file = Some fd; close; _ } -> (
      Fun.protect ~finally:close @@ fun () ->
      try
        send_with t st ~from:0 length ~end_stream:true
          (fun dst dst_off ~piece ~from n ->
            read_slots fd ~offset:(offset + from) dst dst_off ~piece n)
      with File_shrank | Unix.Unix_error _ ->
        log t Error "a file got shorter while it was sent over HTTP/2";
        raise Unwind.Abort)
  | Reader { read; close; file = None } ->
      Fun.protect ~finally:close (fun () ->
          let buf = Bytes.create (Int.min length file_piece) in
          let rec go offset remaining =
            if remaining = 0 then send_data t st buf 0 0 ~end_stream:true
            else
              let n =
                read ~offset buf 0 (Int.min remaining (Bytes.length buf))
              in
              if n = 0 then (
                log t Error "a file got shorter while it was sent over HTTP/2";
                raise Unwind.Abort);
              send_data t st buf 0 n ~end_stream:(n = remaining);
              if n < remaining then go (offset + n) (remaining - n)
          in
          go offset length)

(* {1 Requests} *)

let cookie_separator = "; "

(* The request a stream's header list makes, or why it is malformed
   (RFC 9113 §8.1.1, §8.2, §8.3): a stream error PROTOCOL_ERROR. *)
exception Malformed_request of string

let malformed why = raise_notrace (Malformed_request why)

(* The pseudo-header fields, each at most once. *)
let rec pseudo_fields meth scheme authority path = function
  | [] -> (meth, scheme, authority, path)
  | (f : Hpack.field) :: rest -> (
      let once = function
        | None -> Some f.value
        | Some _ -> malformed ("two " ^ f.name)
      in
      match f.name with
      | ":method" -> pseudo_fields (once meth) scheme authority path rest
      | ":scheme" -> pseudo_fields meth (once scheme) authority path rest
      | ":authority" -> pseudo_fields meth scheme (once authority) path rest
      | ":path" -> pseudo_fields meth scheme authority (once path) rest
      | name -> malformed ("pseudo-header " ^ name ^ " in a request"))

let all_digits v = String.for_all (function '0' .. '9' -> true | _ -> false) v

(* One pass over the regular fields: those kept (newest first), the
   cookies (newest first, joined into one field: RFC 9113 §8.2.3), whether
   a [host] came, and the [content-length], all its copies equal. *)
type regular = {
  mutable kept : (string * string) list;
  mutable cookies : string list;
  mutable host : bool;
  mutable length : string option;
}

let rec regular_fields r = function
  | [] -> ()
  | (f : Hpack.field) :: rest ->
      (match f.name with
      | "cookie" -> r.cookies <- f.value :: r.cookies
      | "te" when f.value <> "trailers" -> malformed "te other than trailers"
      | name when connection_specific name ->
          malformed (name ^ " is connection-specific")
      | name ->
          (match name with
          | "host" -> r.host <- true
          | "content-length" -> (
              match r.length with
              | None -> r.length <- Some f.value
              | Some v when v = f.value -> ()
              | Some _ -> malformed "invalid content-length")
          | _ -> ());
          r.kept <- (name, f.value) :: r.kept);
      regular_fields r rest

(* The request a stream's header list makes, or why it is malformed
   (RFC 9113 §8.1.1, §8.2, §8.3): a stream error PROTOCOL_ERROR. Built in
   two passes with no intermediate lists but the fields kept: it runs for
   every stream. *)
let request_of (headers : Hpack.header_list) ~end_stream =
  match
    let meth, scheme, authority, path =
      pseudo_fields None None None None headers.pseudo
    in
    let r = { kept = []; cookies = []; host = false; length = None } in
    regular_fields r headers.regular;
    let fields =
      match r.cookies with
      | [] -> r.kept
      | cs -> ("cookie", String.concat cookie_separator (List.rev cs)) :: r.kept
    in
    let fields = List.rev fields in
    let meth_name =
      match meth with Some m -> m | None -> malformed "no :method"
    in
    let target, target_form =
      if meth_name = "CONNECT" then
        match (authority, scheme, path) with
        | Some a, None, None -> (a, Request.Authority_form)
        | _ -> malformed "CONNECT with :scheme or :path, or without :authority"
      else
        match (scheme, path) with
        | None, _ -> malformed "no :scheme"
        | _, (None | Some "") -> malformed "no :path"
        | Some _, Some "*" when meth_name = "OPTIONS" ->
            ("*", Request.Asterisk_form)
        | Some _, Some p when p.[0] = '/' -> (p, Request.Origin_form)
        | Some _, Some _ -> malformed ":path is not a path"
    in
    let fields =
      match authority with
      | Some a when not r.host -> ("host", a) :: fields
      | _ -> fields
    in
    let declared =
      match r.length with
      | None -> None
      | Some v -> (
          match int_of_string_opt v with
          | Some n when n >= 0 && all_digits v -> Some n
          | _ -> malformed "invalid content-length")
    in
    (match declared with
    | Some n when end_stream && n > 0 -> malformed "content-length without DATA"
    | _ -> ());
    let body : Request.body =
      if end_stream then No_body
      else
        match declared with
        | Some 0 -> No_body
        | Some n -> Content_length n
        | None -> Chunked
    in
    ( meth_name,
      declared,
      {
        Request.meth = GET;
        target;
        target_form;
        version = Http_2;
        headers = Headers.of_list fields;
        body;
        keep_alive = true;
        expect_continue = false;
      } )
  with
  | request -> Ok request
  | exception Malformed_request why -> Error why

(* {1 A stream's fiber} *)

let access t req ~now ~status ~sent =
  t.c.services.log
    (Access
       { peer = t.c.peer; time = now; request = req; status; body_bytes = sent })

(* What [Pipeline.respond] does for HTTP/1.1, in frames. *)
let respond t st (sc : Pipeline_state.t) (req : Request.t) ~now
    (response : Response.t) body =
  let response =
    match response.body with
    | Upgrade _ ->
        Protocol_switch.refused sc req ~time:now
          "HTTP/2 has no protocol upgrade (RFC 9113 §8.6)"
    | _ -> (
        match Body.failure body with
        | Some e
          when not (match response.body with Stream _ -> true | _ -> false) ->
            Dispatch.error_page sc (Some req) (Handler.bad_request e)
        | _ -> response)
  in
  let no_content = req.meth = HEAD || Status.has_no_body response.status in
  let response, contents =
    match response.body with
    | File { path; info; _ } when not no_content -> (
        match sc.services.open_file path info with
        | Ok contents -> (response, Some contents)
        | Error e ->
            (match e with
            | Failed why -> Pipeline_state.log_error sc (path ^ ": " ^ why)
            | Not_found | Forbidden -> ());
            (Dispatch.error_page sc (Some req) (Static.file_error e), None)
        | exception exn -> (Dispatch.failure sc req ~time:now exn, None))
    | _ -> (response, None)
  in
  let length =
    match (response.body, contents) with
    | Empty, _ -> Some 0
    | String s, _ -> Some (String.length s)
    | File { length; _ }, _ -> Some length
    | Stream _, _ -> response.stream_length
    | Upgrade _, _ -> None
  in
  let status = response.status and headers = response.headers in
  let head ~end_stream =
    sc.head_written <- true;
    send_head t st ~now ~status ~headers ~length ~end_stream
  in
  let sent =
    if no_content then (
      head ~end_stream:true;
      0)
    else
      match (response.body, contents) with
      | Empty, _ | File _, None | Upgrade _, _ ->
          head ~end_stream:true;
          0
      | String "", _ ->
          head ~end_stream:true;
          0
      | String s, _ ->
          head ~end_stream:false;
          send_data t st (Bytes.unsafe_of_string s) 0 (String.length s)
            ~end_stream:true;
          String.length s
      | File { offset; length; _ }, Some contents ->
          head ~end_stream:(length = 0);
          if length > 0 then send_file t st contents ~offset ~length;
          length
      | Stream f, _ ->
          head ~end_stream:false;
          let sent = ref 0 in
          (* A DATA frame past the content-length sent makes the stream
             malformed (RFC 9113 §8.1.1); fewer bytes too. *)
          let wrong_length () =
            reset_stream t st Internal_error;
            raise Unwind.Abort
          in
          let writer =
            Response.Writer.make
              ~write:(fun buf off len ->
                (match length with
                | Some n when !sent + len > n -> wrong_length ()
                | _ -> ());
                sent := !sent + len;
                send_data t st buf off len ~end_stream:false)
              ~flush:(fun () -> ())
          in
          (match f writer with
          | () -> ()
          | exception e when not (Unwind.is_connections_own e) ->
              let backtrace = Printexc.get_raw_backtrace () in
              sc.services.log
                (Handler_failed
                   { time = now; request = req; exn = e; backtrace });
              reset_stream t st Internal_error;
              raise Unwind.Abort);
          (match length with
          | Some n when !sent < n -> wrong_length ()
          | _ -> ());
          send_data t st Bytes.empty 0 0 ~end_stream:true;
          !sent
  in
  access t (Some req) ~now ~status ~sent

(* The stream's own state for the pipeline's modules: the connection's, but
   its input is the stream's body. *)
let stream_state t st (req : Request.t) : Pipeline_state.t =
  let input =
    match req.body with
    | No_body -> t.c.input
    | Content_length _ | Chunked ->
        Input.create ~size:4096 ~read:(read_body t st) ()
  in
  {
    t.c with
    input;
    out = t.dummy_out;
    body = Body.empty;
    ending = Handler.Ending.finished;
    head_written = false;
    abandon_body = false;
  }

let run_stream t st (req : Request.t) ~now =
  let sc = stream_state t st req in
  let path, query = Url_path.split_target req.target in
  (match
     let response, body = Dispatch.dispatch sc req ~now ~path ~query in
     Fun.protect
       ~finally:(fun () -> Body.close body)
       (fun () -> respond t st sc req ~now response body)
   with
  | () -> ()
  | exception Unwind.Timed_out ->
      if not sc.head_written then (
        let r = Dispatch.error_page sc (Some req) (Response.error 408 "") in
        let text = match r.body with String s -> s | _ -> "" in
        (try
           send_head t st ~now ~status:r.status ~headers:r.headers
             ~length:(Some (String.length text))
             ~end_stream:(text = "");
           if text <> "" then
             send_data t st
               (Bytes.unsafe_of_string text)
               0 (String.length text) ~end_stream:true
         with Unwind.Abort | Unwind.Timed_out -> ());
        access t (Some req) ~now ~status:r.status ~sent:0);
      reset_stream t st Cancel
  | exception (Unwind.Abort | Braid.Cancelled) -> ()
  | exception e ->
      let backtrace = Printexc.get_raw_backtrace () in
      sc.services.log
        (Handler_failed { time = now; request = req; exn = e; backtrace });
      reset_stream t st Internal_error);
  (* Whether or not its response went out (Handler.at_end). *)
  Handler.Ending.run sc.ending;
  (* The response is complete while the client still sends its body: it
     is read to its end and dropped, and checked (its declared length, the
     frames that may follow), as HTTP/1.1 drains a body, up to the body
     limit and while few streams wait so; past those, RST_STREAM NO_ERROR
     asks the client to stop (RFC 9113 §8.1). *)
  if not (st.remote_closed || st.reset) then
    match st.declared_length with
    | (None | Some _) as n
      when Option.value n ~default:0 <= t.c.config.limits.max_body
           && Streams.length t.streams <= 2 * t.h.max_concurrent_streams ->
        let unread = Queue.fold (fun n p -> n + p.credit) 0 st.pieces in
        Queue.clear st.pieces;
        give_back t st unread;
        st.discarding <- true
    | _ -> reset_stream t st No_error

(* {1 The connection's frames} *)

let connection_error code reason = raise (Connection_error (code, reason))

let start_stream t st req ~now =
  t.running <- t.running + 1;
  t.started <- t.started + 1;
  Streams.replace t.streams st.id st;
  let finish () =
    t.running <- t.running - 1;
    st.fiber <- None;
    if st.response_done && not st.reset then earn_control t 4;
    if st.response_done then
      t.reset_tokens <- Int.min t.h.reset_budget (t.reset_tokens + 1);
    discard_body t st;
    if not st.discarding then forget t st;
    if t.running = 0 then wake t.streams_done
  in
  st.fiber <-
    Some
      (Braid.Switch.fork t.switch (fun () ->
           Fun.protect ~finally:finish (fun () ->
               try run_stream t st req ~now with _ -> ())))

(* A complete field block opening stream [id] (or carrying its trailers). *)
let field_block t ~id ~end_stream ~self_dependent bytes off len =
  let decoded = Hpack.Decoder.decode t.decoder bytes off len in
  (match decoded with
  | Error (Compression_error why) -> connection_error Compression_error why
  | _ -> ());
  match Streams.find_opt t.streams id with
  | Some st -> (
      if
        (* Trailers: END_STREAM, no pseudo-header; the API has no place for
         them, so they are dropped. *)
        st.reset
      then (
        if not (was_reset_here t id) then
          connection_error Stream_closed "HEADERS on a reset stream")
      else if st.remote_closed then
        connection_error Stream_closed "HEADERS on a half-closed stream"
      else if st.discarding then
        if
          (* Trailers of a body nobody reads. *)
          end_stream
        then forget t st
        else reset_stream t st Protocol_error
      else
        match decoded with
        | Ok { pseudo = []; _ } when end_stream -> (
            st.remote_closed <- true;
            match st.declared_length with
            | Some n when n <> st.received -> reset_stream t st Protocol_error
            | _ ->
                if st.chunked then
                  Queue.push { text = "0\r\n\r\n"; credit = 0 } st.pieces;
                wake st.data_arrived)
        | _ -> reset_stream t st Protocol_error)
  | None ->
      if id land 1 = 0 then connection_error Protocol_error "even stream";
      if id <= t.last_client_stream then
        if was_reset_here t id then ()
        else connection_error Stream_closed "HEADERS on a closed stream"
      else (
        t.last_client_stream <- id;
        earn_control t 4;
        let st =
          {
            id;
            pieces = Queue.create ();
            piece_off = 0;
            recv_window = t.h.stream_window;
            unannounced = 0;
            declared_length = None;
            received = 0;
            chunked = false;
            data_arrived = waiter ();
            send_window = t.peer.initial_window_size;
            window_opened = waiter ();
            remote_closed = end_stream;
            response_done = false;
            reset = false;
            discarding = false;
            fiber = None;
          }
        in
        let refuse code =
          add_frame t (Rst_stream { stream = id; code });
          remember_reset t id
        in
        match t.going_away with
        | Some last when id > last -> ()
        | _ -> (
            if self_dependent then refuse Protocol_error
            else if t.running >= t.h.max_concurrent_streams || t.peer_going_away
            then refuse Refused_stream
            else
              let now = Head_cache.now t.c.dates t.c.services in
              match decoded with
              | Error (Compression_error _) -> ()
              | Error (Malformed _) -> refuse Protocol_error
              | Error (Header_list_too_large _) ->
                  (* Answered without a handler: 431 (RFC 9113 §10.5.1). *)
                  let r =
                    Dispatch.error_page t.c None (Response.error 431 "")
                  in
                  let text = match r.body with String s -> s | _ -> "" in
                  send_head t st ~now ~status:r.status ~headers:r.headers
                    ~length:(Some (String.length text))
                    ~end_stream:(text = "");
                  if text <> "" then
                    add_data t.pending ~stream:id ~end_stream:true
                      ~piece:t.peer.max_frame_size
                      (Bytes.unsafe_of_string text)
                      0 (String.length text);
                  access t None ~now ~status:r.status ~sent:(String.length text);
                  if not end_stream then refuse No_error
              | Ok headers -> (
                  match request_of headers ~end_stream with
                  | Error why ->
                      log t Debug ("malformed HTTP/2 request: " ^ why);
                      refuse Protocol_error
                  | Ok (meth_name, declared, req) -> (
                      (* Set before its fiber starts: nothing else has
                         seen the record yet. *)
                      st.declared_length <- declared;
                      st.chunked <- req.body = Chunked;
                      match Method.of_string meth_name with
                      | Some meth -> start_stream t st { req with meth } ~now
                      | None ->
                          let r =
                            Dispatch.error_page t.c None
                              (Response.error 501 "unknown method")
                          in
                          let text =
                            match r.body with String s -> s | _ -> ""
                          in
                          send_head t st ~now ~status:r.status
                            ~headers:r.headers
                            ~length:(Some (String.length text))
                            ~end_stream:false;
                          add_data t.pending ~stream:id ~end_stream:true
                            ~piece:t.peer.max_frame_size
                            (Bytes.unsafe_of_string text)
                            0 (String.length text);
                          access t None ~now ~status:r.status
                            ~sent:(String.length text);
                          if not end_stream then refuse No_error))))

let begin_block t ~stream ~end_stream ~end_headers ~self_dependent
    (fragment : Frame.payload) =
  if end_headers then
    (* Whole in one frame, the usual case: decoded where it lies. *)
    field_block t ~id:stream ~end_stream ~self_dependent fragment.bytes
      fragment.off fragment.len
  else (
    Buffer.clear t.block;
    Buffer.add_subbytes t.block fragment.bytes fragment.off fragment.len;
    t.block_stream <- stream;
    t.block_frames <- 1;
    t.block_deadline <-
      t.c.services.monotonic_ns ()
      + Progress.ns_of_seconds t.c.config.timeouts.request_header;
    t.block_end_stream <- end_stream;
    t.block_self_dependent <- self_dependent)

let continue_block t ~end_headers (fragment : Frame.payload) =
  t.block_frames <- t.block_frames + 1;
  if t.block_frames > max_block_frames then
    connection_error Enhance_your_calm
      "field block in too many CONTINUATION frames";
  if Buffer.length t.block + fragment.len > max_block_bytes t then
    connection_error Enhance_your_calm "field block too large";
  Buffer.add_subbytes t.block fragment.bytes fragment.off fragment.len;
  if end_headers then (
    let id = t.block_stream in
    t.block_stream <- 0;
    let block = Buffer.to_bytes t.block in
    field_block t ~id ~end_stream:t.block_end_stream
      ~self_dependent:t.block_self_dependent block 0 (Bytes.length block))

let on_data t ~stream ~end_stream (data : Frame.payload) ~flow =
  if stream > t.last_client_stream then
    connection_error Protocol_error "DATA on an idle stream";
  if flow > t.recv_window then
    connection_error Flow_control_error "DATA beyond the connection window";
  t.recv_window <- t.recv_window - flow;
  if data.len = 0 && not end_stream then spend_control t;
  match Streams.find_opt t.streams stream with
  | None ->
      give_back_connection t flow;
      if not (was_reset_here t stream) then (
        add_frame t (Rst_stream { stream; code = Stream_closed });
        remember_reset t stream)
  | Some st when st.reset ->
      give_back_connection t flow;
      if not (was_reset_here t stream) then (
        add_frame t (Rst_stream { stream; code = Stream_closed });
        remember_reset t stream)
  | Some st when st.discarding -> (
      give_back_connection t flow;
      st.received <- st.received + data.len;
      match st.declared_length with
      | Some n when st.received > n || (end_stream && st.received <> n) ->
          reset_stream t st Protocol_error
      | _ when st.received > t.c.config.limits.max_body ->
          reset_stream t st No_error
      | _ ->
          if end_stream then forget t st
          else (
            st.recv_window <- st.recv_window - flow;
            st.unannounced <- st.unannounced + flow;
            if st.unannounced >= t.h.stream_window / 2 then (
              add_frame t
                (Window_update { stream = st.id; increment = st.unannounced });
              st.recv_window <- st.recv_window + st.unannounced;
              st.unannounced <- 0)))
  | Some st when st.remote_closed ->
      give_back_connection t flow;
      reset_stream t st Stream_closed
  | Some st ->
      if flow > st.recv_window then (
        give_back_connection t flow;
        reset_stream t st Flow_control_error)
      else (
        st.recv_window <- st.recv_window - flow;
        (* Padding is nobody's to read: given back at once. *)
        give_back t st (flow - data.len);
        st.received <- st.received + data.len;
        match st.declared_length with
        | Some n when st.received > n || (end_stream && st.received <> n) ->
            give_back_connection t data.len;
            reset_stream t st Protocol_error
        | _ ->
            (if data.len > 0 then
               let text = Bytes.sub_string data.bytes data.off data.len in
               if st.chunked then (
                 Queue.push
                   { text = Printf.sprintf "%x\r\n" data.len; credit = 0 }
                   st.pieces;
                 Queue.push { text; credit = data.len } st.pieces;
                 Queue.push { text = "\r\n"; credit = 0 } st.pieces)
               else Queue.push { text; credit = data.len } st.pieces);
            if end_stream then (
              st.remote_closed <- true;
              if st.chunked then
                Queue.push { text = "0\r\n\r\n"; credit = 0 } st.pieces);
            wake st.data_arrived)

let wake_connection_window t =
  Queue.iter wake t.connection_window;
  Queue.clear t.connection_window

let on_settings t settings =
  spend_control t;
  let old = t.peer.initial_window_size in
  let peer = Settings.apply t.peer settings in
  let delta = peer.initial_window_size - old in
  if delta <> 0 then
    Streams.iter
      (fun _ (st : stream) ->
        if st.send_window + delta > max_window then
          connection_error Flow_control_error "a stream window past 2^31-1";
        st.send_window <- st.send_window + delta;
        if delta > 0 then wake st.window_opened)
      t.streams;
  if peer.header_table_size <> t.peer.header_table_size then
    Hpack.Encoder.set_max_table_size t.encoder peer.header_table_size;
  t.peer <- peer;
  add_frame t Settings_ack

let on_window_update t ~stream ~increment =
  spend_control t;
  if stream = 0 then (
    if t.send_window + increment > max_window then
      connection_error Flow_control_error "the connection window past 2^31-1";
    t.send_window <- t.send_window + increment;
    wake_connection_window t)
  else if stream > t.last_client_stream then
    connection_error Protocol_error "WINDOW_UPDATE on an idle stream"
  else
    match Streams.find_opt t.streams stream with
    | Some st when not st.reset ->
        if st.send_window + increment > max_window then
          reset_stream t st Flow_control_error
        else (
          st.send_window <- st.send_window + increment;
          wake st.window_opened)
    | _ -> ()

let on_reset t ~stream =
  if stream > t.last_client_stream then
    connection_error Protocol_error "RST_STREAM on an idle stream";
  match Streams.find_opt t.streams stream with
  | Some st when not st.reset -> (
      if not st.response_done then spend_reset t;
      st.reset <- true;
      discard_body t st;
      wake st.data_arrived;
      wake st.window_opened;
      match st.fiber with
      | Some fiber -> Braid.Fiber.cancel fiber
      | None -> forget t st)
  | _ -> ()

let on_frame t (frame : Frame.t) =
  if t.block_stream <> 0 then
    match frame with
    | Continuation { stream; end_headers; fragment }
      when stream = t.block_stream ->
        continue_block t ~end_headers fragment
    | _ -> connection_error Protocol_error "a field block interrupted"
  else
    match frame with
    | Data { stream; end_stream; data; _ } ->
        on_data t ~stream ~end_stream data
          ~flow:(Frame.flow_controlled_length frame)
    | Headers { stream; end_stream; end_headers; priority; fragment; _ } ->
        let self_dependent =
          match priority with
          | Some { depends_on; _ } -> depends_on = stream
          | None -> false
        in
        begin_block t ~stream ~end_stream ~end_headers ~self_dependent fragment
    | Priority _ -> spend_control t
    | Rst_stream { stream; _ } -> on_reset t ~stream
    | Settings settings -> on_settings t settings
    | Settings_ack -> ()
    | Push_promise _ ->
        connection_error Protocol_error "PUSH_PROMISE from a client"
    | Ping { ack = false; data } ->
        spend_control t;
        add_frame t (Ping { ack = true; data })
    | Ping { ack = true; _ } -> spend_control t
    | Goaway _ -> t.peer_going_away <- true
    | Window_update { stream; increment } ->
        on_window_update t ~stream ~increment
    | Continuation _ ->
        connection_error Protocol_error "CONTINUATION without HEADERS"
    | Unknown _ -> spend_control t

(* {1 The connection} *)

type ending = Peer_gone | Ended_by_server

let send_goaway t code debug =
  let last = t.last_client_stream in
  (match t.going_away with
  | Some _ when code = Error_code.No_error -> ()
  | _ -> add_frame t (Goaway { last_stream = last; code; debug }));
  t.going_away <- Some last

let rec writer t =
  if t.pending.length = 0 then
    if t.closing then ()
    else (
      wake_one t.turns;
      wait t.output_ready;
      writer t)
  else
    let out = t.pending in
    t.pending <- t.spare;
    t.spare <- out;
    t.writing <- true;
    t.c.upgraded_write out.bytes 0 out.length;
    t.writing <- false;
    out.length <- 0;
    Queue.iter wake t.drained;
    Queue.clear t.drained;
    wake_one t.turns;
    writer t

let draining t = Atomic.get t.c.progress.draining

(* A connection idle for [idle_grace] seconds drops its output buffers
   (made again at [first_size] bytes by the next frame): a crowd of idle
   connections would otherwise hold two each, grown to the largest burst
   they sent. Not sooner: dropping them whenever the last stream ended
   had each burst allocate them again, 8,000 large allocations for 20,000
   requests under h2load -c10 -m10, whose collection took a tenth of the
   server's instructions (callgrind: 24,003 per request, 21,341 without). *)
let idle_grace = 1.0

let shed_output t =
  if (not t.writing) && t.pending.length = 0 then (
    t.pending.bytes <- Bytes.empty;
    t.spare.bytes <- Bytes.empty)

(* Stream fibers the connection's fiber forks before it lets them run (it
   yields). A read may bring a hundred HEADERS frames (h2load -m100);
   forking them all first, with a hundred connections doing the same, left
   thousands of fibers waiting at once, and the collector marking their
   stacks and promoting what they hold took two thirds of the server's
   instructions. Callgrind, instructions per request of 1 KiB under
   h2load -c100 -m100 and -c10 -m10: no yield 56,055 and 18,478; after 8
   streams 44,200 and 18,891; 4: 37,978 and 19,140; 2: 33,398 and 19,538;
   1: 27,059 and 20,646 (a yield costs a scheduling round). The writer
   waits meanwhile ([parsing]): woken at each yield, it had written after
   every 4 streams, 0.25 writes per request rather than 0.10 and 0.022
   (strace), which cost more in the kernel than the collector saved. *)
let burst = 4

(* Reads frames until the connection ends, in the connection's fiber. *)
let rec read_frames t =
  let input = t.c.input in
  let rec next () =
    if t.going_away <> None && t.running = 0 then Ended_by_server
    else if t.peer_going_away && t.running = 0 then Peer_gone
    else if draining t && t.going_away = None then (
      send_goaway t No_error "";
      next ())
    else
      match
        Frame.parse ~max_frame_size:t.h.max_frame_size input.buf input.pos
          (Input.length input)
      with
      | Frame (frame, used) ->
          Input.consume input used;
          on_frame t frame;
          if t.started >= burst then (
            t.started <- 0;
            Braid.Fiber.yield ());
          next ()
      | Invalid (Connection_error { code; reason }, _) ->
          connection_error code reason
      | Invalid (Stream_error { stream; code; _ }, used) ->
          Input.consume input used;
          (match Streams.find_opt t.streams stream with
          | Some st -> reset_stream t st code
          | None ->
              add_frame t (Rst_stream { stream; code });
              remember_reset t stream);
          next ()
      | Need_more _ -> (
          t.started <- 0;
          t.parsing <- false;
          if t.pending.length > 0 then wake t.output_ready;
          match
            let n = refill_input t in
            if n > 0 then t.parsing <- true;
            n
          with
          | 0 -> if t.running = 0 then Peer_gone else await_streams t
          | -1 ->
              send_goaway t No_error "idle";
              Ended_by_server
          | _ -> next ()
          | exception
              (Upgraded.Shutdown | Unwind.Io_failed (Upgraded.Shutdown, _)) ->
              send_goaway t No_error "";
              next ())
  in
  next ()

(* An idle connection (no stream) waits [timeouts.keep_alive] for one; a
   field block in progress, until its deadline. *)
and refill_input t =
  let input = t.c.input in
  if t.block_stream <> 0 then
    let left = t.block_deadline - t.c.services.monotonic_ns () in
    match
      t.c.services.timeout
        (Float.of_int (Int.max 0 left) /. 1e9)
        (fun () -> Input.refill input)
    with
    | Some n -> n
    | None ->
        connection_error Enhance_your_calm
          "field block not complete within the request header timeout"
  else if t.running = 0 then (
    t.c.progress.phase <- Upgraded;
    (* Idle: the input buffer goes back to the loop's pool (when nothing
       unread is in it), as an idle HTTP/1.1 connection's does, and the
       next read takes one again: a push and a pop. *)
    Input.release input;
    let keep_alive = t.c.config.timeouts.keep_alive in
    let grace = Float.min idle_grace keep_alive in
    match t.c.services.timeout grace (fun () -> Input.refill input) with
    | Some n -> n
    | None -> (
        shed_output t;
        match
          t.c.services.timeout (keep_alive -. grace) (fun () ->
              Input.refill input)
        with
        | Some n -> n
        | None -> -1))
  else Input.refill input

(* The client has closed its side with streams still answering. *)
and await_streams t =
  if t.running > 0 then (
    wait t.streams_done;
    await_streams t)
  else Peer_gone

let settings_of (h : Config.http2) =
  Frame.Settings
    [
      Max_concurrent_streams h.max_concurrent_streams;
      Initial_window_size h.stream_window;
      Max_frame_size h.max_frame_size;
      Max_header_list_size h.max_header_list_size;
    ]

let create (c : Pipeline_state.t) switch =
  let h = c.config.http2 in
  {
    c;
    h;
    decoder =
      Hpack.Decoder.create ~max_header_list_size:h.max_header_list_size ();
    encoder = Hpack.Encoder.create ();
    streams = Streams.create 16;
    last_client_stream = 0;
    running = 0;
    started = 0;
    peer = Settings.default;
    send_window = 65_535;
    recv_window = Int.max 65_535 h.connection_window;
    unannounced = 0;
    connection_window = Queue.create ();
    (* Small at first, grown by what the connection sends, back to this
       when it is idle. *)
    pending = { bytes = Bytes.create first_size; length = 0 };
    spare = { bytes = Bytes.create first_size; length = 0 };
    output_ready = waiter ();
    drained = Queue.create ();
    turns = Queue.create ();
    closing = false;
    writing = false;
    parsing = true;
    going_away = None;
    peer_going_away = false;
    streams_done = waiter ();
    control_tokens = h.control_frame_budget;
    reset_tokens = h.reset_budget;
    refilled_at = c.services.monotonic_ns ();
    recently_reset = [||];
    recently_reset_next = 0;
    block_stream = 0;
    block = Buffer.create 16;
    block_frames = 0;
    block_deadline = 0;
    block_end_stream = false;
    block_self_dependent = false;
    scratch = Buffer.create 64;
    dummy_out =
      Output.create ~size:64 (fun _ _ _ ->
          invalid_arg "HTTP/2: a stream wrote to the HTTP/1.1 output");
    switch;
  }

let serve (c : Pipeline_state.t) =
  let progress = c.progress in
  (* Never idle for the sweeper (the connection enforces its own idle
     timeout) and told of a drain by [Upgraded.Shutdown]. *)
  progress.phase <- Upgraded;
  progress.first <- false;
  Input.consume c.input (String.length Frame.client_preface);
  Output.flush c.out;
  (* Frames go out through [pending]: the HTTP/1.1 output buffer (16 KiB by
     default) goes back to the loop's pool for the connection's life. *)
  Output.release c.out;
  Braid.Switch.run @@ fun sw ->
  let t = create c sw in
  add_frame t (settings_of t.h);
  if t.recv_window > 65_535 then
    add_frame t
      (Window_update { stream = 0; increment = t.recv_window - 65_535 });
  let writer = Braid.Switch.fork sw (fun () -> writer t) in
  let ending =
    match read_frames t with
    | ending -> ending
    | exception Connection_error (code, reason) ->
        log t Debug
          (Printf.sprintf "HTTP/2 connection error %s: %s"
             (Error_code.to_string code)
             reason);
        send_goaway t code reason;
        Ended_by_server
  in
  Streams.iter (fun _ st -> Option.iter Braid.Fiber.cancel st.fiber) t.streams;
  t.closing <- true;
  Queue.iter wake t.drained;
  Queue.iter wake t.turns;
  wake_connection_window t;
  wake t.output_ready;
  Braid.Fiber.join writer;
  ending
