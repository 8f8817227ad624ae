module Net = Braid_io.Net
module Frame = Braid_http.Websocket_codec.Frame

type t = {
  sock : Net.socket;
  mask : string;
  mutable buf : bytes;
  mutable off : int;  (** Start of the unread bytes. *)
  mutable len : int;  (** How many there are. *)
}

(* Reads more into [t.buf] after the unread bytes, moving them to the start
   (and growing the buffer) when there is no room. *)
let fill t =
  if t.off + t.len = Bytes.length t.buf then (
    if t.len = Bytes.length t.buf then (
      let b = Bytes.create (2 * Bytes.length t.buf) in
      Bytes.blit t.buf t.off b 0 t.len;
      t.buf <- b)
    else Bytes.blit t.buf t.off t.buf 0 t.len;
    t.off <- 0);
  let start = t.off + t.len in
  match Net.read_into t.sock t.buf start (Bytes.length t.buf - start) with
  | 0 -> failwith "the server closed the connection"
  | n -> t.len <- t.len + n
  | exception Braid_io.Io_error _ -> failwith "reading from the server failed"

let write t s =
  try Net.write_string t.sock s
  with Braid_io.Io_error _ -> failwith "writing to the server failed"

let key = "dGhlIHNhbXBsZSBub25jZQ=="

let index_of ~sub b off len =
  let n = String.length sub in
  let rec at i =
    if i + n > off + len then None
    else if Bytes.sub_string b i n = sub then Some i
    else at (i + 1)
  in
  at off

let connect ~sw ~port ~path =
  let sock =
    try Net.connect ~sw (Net.tcp "127.0.0.1" port)
    with Braid_io.Io_error _ -> failwith "connecting to the server failed"
  in
  let mask = String.init 4 (fun _ -> Char.chr (Random.int 256)) in
  let t = { sock; mask; buf = Bytes.create 65536; off = 0; len = 0 } in
  write t
    (Printf.sprintf
       "GET %s HTTP/1.1\r\n\
        Host: 127.0.0.1:%d\r\n\
        Upgrade: websocket\r\n\
        Connection: Upgrade\r\n\
        Sec-WebSocket-Key: %s\r\n\
        Sec-WebSocket-Version: 13\r\n\
        \r\n"
       path port key);
  let rec head () =
    match index_of ~sub:"\r\n\r\n" t.buf t.off t.len with
    | Some i -> i + 4 - t.off
    | None ->
        fill t;
        head ()
  in
  let n = head () in
  let response = String.lowercase_ascii (Bytes.sub_string t.buf t.off n) in
  t.off <- t.off + n;
  t.len <- t.len - n;
  let accept =
    String.lowercase_ascii (Braid_http.Websocket_codec.accept_key key)
  in
  if
    String.length response < 12
    || String.sub response 0 12 <> "http/1.1 101"
    || Option.is_none (index_of ~sub:accept (Bytes.of_string response) 0 n)
  then failwith ("the handshake failed: " ^ String.escaped response);
  t

let send_text t s = write t (Frame.serialize ~mask:t.mask Text s)

let close t =
  try write t (Frame.serialize ~mask:t.mask Close "\003\232")
  with Failure _ -> ()

let rec receive t =
  match Frame.parse_header t.buf t.off t.len with
  | Need_more ->
      fill t;
      receive t
  | Invalid msg -> failwith ("a bad frame from the server: " ^ msg)
  | Header (h, size) when t.len < size + h.length ->
      fill t;
      receive t
  | Header (h, size) -> (
      let payload = Bytes.sub t.buf (t.off + size) h.length in
      Option.iter (fun mask -> Frame.apply_mask ~mask payload 0 h.length) h.mask;
      t.off <- t.off + size + h.length;
      t.len <- t.len - size - h.length;
      match h.opcode with
      | Text when h.fin -> Bytes.unsafe_to_string payload
      | Ping ->
          write t
            (Frame.serialize ~mask:t.mask Pong (Bytes.unsafe_to_string payload));
          receive t
      | Pong -> receive t
      | Close ->
          failwith
            (Printf.sprintf "the server closed the WebSocket (%S)"
               (Bytes.unsafe_to_string payload))
      | _ -> failwith "an unexpected frame from the server")
