open Head_scanner

(* [Stdlib.min] is polymorphic: a call to the generic comparison. *)
let min (a : int) b = if a < b then a else b

type state =
  | Fixed  (** [remaining] bytes of a Content-Length body. *)
  | Chunk_data  (** [remaining] bytes of the current chunk. *)
  | Chunk_end  (** The line ending after chunk data. *)
  | Chunk_size  (** A chunk-size line. *)
  | Finished
  | Failed of Parse_error.t

type t = {
  input : Input.t;
  limits : Limits.t;
  source : string option;  (** Of [limits.max_body], for its 413. *)
  mutable state : state;
  mutable remaining : int;
  mutable total : int;  (** Decoded bytes announced so far. *)
  mutable trailers : Headers.t;
}

let create ?source input (limits : Limits.t) (framing : Request.body) =
  let state, remaining =
    match framing with
    | No_body -> (Finished, 0)
    | Content_length n when n <= 0 -> (Finished, 0)
    | Content_length n when n > limits.max_body ->
        ( Failed
            {
              status = 413;
              reason = Limits.body_too_large ?source limits;
              close = true;
            },
          0 )
    | Content_length n -> (Fixed, n)
    | Chunked -> (Chunk_size, 0)
  in
  {
    input;
    limits;
    source;
    state;
    remaining;
    total = 0;
    trailers = Headers.empty;
  }

let is_hex c =
  (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')

let hex_value c =
  if c <= '9' then Char.code c - 48
  else Char.code (Char.lowercase_ascii c) - Char.code 'a' + 10

(* quoted-string body after the opening quote (RFC 9110 §5.6.4); returns
   the index after the closing quote. *)
let rec quoted buf i stop =
  if i >= stop then reject 400 "unterminated quoted chunk extension"
  else
    match Bytes.unsafe_get buf i with
    | '"' -> i + 1
    | '\\' ->
        if i + 1 >= stop then reject 400 "unterminated quoted chunk extension"
        else if is_field_char (Bytes.unsafe_get buf (i + 1)) then
          quoted buf (i + 2) stop
        else reject_char (Bytes.unsafe_get buf (i + 1)) "bad quoted-pair"
    | c when is_field_char c -> quoted buf (i + 1) stop
    | c -> reject_char c "invalid character in chunk extension"

(* chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ) *)
let rec extensions buf i stop =
  let i = skip_ows buf i stop in
  if i = stop then ()
  else if Bytes.unsafe_get buf i <> ';' then
    reject_char (Bytes.unsafe_get buf i) "invalid chunk extension"
  else
    let name = skip_ows buf (i + 1) stop in
    let name_stop = scan_tchars buf name stop in
    if name_stop = name then reject 400 "invalid chunk extension name";
    let i = skip_ows buf name_stop stop in
    if i < stop && Bytes.unsafe_get buf i = '=' then (
      let v = skip_ows buf (i + 1) stop in
      if v < stop && Bytes.unsafe_get buf v = '"' then
        extensions buf (quoted buf (v + 1) stop) stop
      else
        let v_stop = scan_tchars buf v stop in
        if v_stop = v then reject 400 "invalid chunk extension value";
        extensions buf v_stop stop)
    else extensions buf i stop

(* Reads a chunk-size line; returns the size. *)
let chunk_size (t : t) =
  let input = t.input in
  let lf =
    find_lf input
      ~budget:(t.limits.max_chunk_line + 2)
      ~status:400 ~reason:"chunk-size line too long"
  in
  let buf = input.buf and start = input.pos in
  let stop = content_end buf start lf in
  let rec digits i size =
    if i < stop && is_hex (Bytes.unsafe_get buf i) then
      if size > (max_int lsr 4) - 1 then reject 413 "chunk too large"
      else digits (i + 1) ((size lsl 4) lor hex_value (Bytes.unsafe_get buf i))
    else if i = start then
      if i = stop then reject 400 "missing chunk size"
      else reject_char (Bytes.unsafe_get buf i) "invalid chunk size"
    else (
      extensions buf i stop;
      size)
  in
  let size = digits start 0 in
  Input.consume input (lf + 1 - start);
  size

(* Body bytes readable now at [input.pos]: at least 1, or 0 at the end.
   Moves through chunk framing as needed. *)
let rec ready t =
  match t.state with
  | Fixed | Chunk_data ->
      let available = Input.length t.input in
      if available > 0 then min available t.remaining
      else if Input.refill t.input = 0 then reject 400 "body truncated"
      else ready t
  | Chunk_end ->
      let lf =
        find_lf t.input ~budget:2 ~status:400
          ~reason:"missing line ending after chunk data"
      in
      if content_end t.input.buf t.input.pos lf <> t.input.pos then
        reject 400 "missing line ending after chunk data";
      Input.consume t.input (lf + 1 - t.input.pos);
      t.state <- Chunk_size;
      ready t
  | Chunk_size ->
      let size = chunk_size t in
      if size = 0 then (
        t.trailers <-
          field_section t.input ~max_fields:t.limits.max_header_fields
            ~max_bytes:t.limits.max_header_bytes;
        t.state <- Finished;
        0)
      else if size > t.limits.max_body - t.total then
        reject 413 (Limits.body_too_large ?source:t.source t.limits)
      else (
        t.total <- t.total + size;
        t.remaining <- size;
        t.state <- Chunk_data;
        ready t)
  | Finished -> 0
  | Failed e -> raise_notrace (Rejected e)

let advance t n =
  Input.consume t.input n;
  t.remaining <- t.remaining - n;
  if t.remaining = 0 then
    t.state <- (match t.state with Fixed -> Finished | _ -> Chunk_end)

(* Runs [f] and turns parse failures into a sticky [Error]. *)
let guard t f =
  match f t with
  | v -> Ok v
  | exception Rejected e ->
      t.state <- Failed e;
      Error e
  | exception Truncated ->
      let e =
        { Parse_error.status = 400; reason = "body truncated"; close = true }
      in
      t.state <- Failed e;
      Error e

let read t buf off len =
  if len <= 0 || off < 0 || off > Bytes.length buf - len then
    invalid_arg "Request_body.read";
  guard t (fun t ->
      let n = min len (ready t) in
      if n > 0 then (
        Bytes.blit t.input.buf t.input.pos buf off n;
        advance t n);
      n)

let iter t f =
  guard t (fun t ->
      let rec loop () =
        let n = ready t in
        if n > 0 then (
          f t.input.buf t.input.pos n;
          advance t n;
          loop ())
      in
      loop ())

let drain t =
  guard t (fun t ->
      let rec loop () =
        let n = ready t in
        if n > 0 then (
          advance t n;
          loop ())
      in
      loop ())

(* A whole body is read into memory as it arrives: never more than this
   ahead of the bytes received, whatever length the head declared. *)
let reserve_ahead = 65536

let to_string t =
  match t.state with
  | Fixed when t.remaining <= reserve_ahead ->
      (* The size is known and small: fill one string, no intermediate
         buffer. *)
      let out = Bytes.create t.remaining in
      let rec loop off =
        if off = Bytes.length out then Ok (Bytes.unsafe_to_string out)
        else
          match read t out off (Bytes.length out - off) with
          | Ok 0 -> Ok (Bytes.sub_string out 0 off) (* not reached *)
          | Ok n -> loop (off + n)
          | Error _ as e -> e
      in
      loop 0
  | _ -> (
      let out =
        Buffer.create (match t.state with Fixed -> reserve_ahead | _ -> 1024)
      in
      match iter t (fun buf off len -> Buffer.add_subbytes out buf off len) with
      | Ok () -> Ok (Buffer.contents out)
      | Error _ as e -> e)

let is_finished t = match t.state with Finished -> true | _ -> false
let trailers t = t.trailers
