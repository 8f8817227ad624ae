module Frame = Braid_http2.Frame
module Hpack = Braid_http2.Hpack

type t = Unix.file_descr list

let frames fs =
  let b = Buffer.create 128 in
  List.iter (Frame.write b) fs;
  Buffer.contents b

(* The preface, empty SETTINGS, and [GET path] on stream 1. *)
let opening path =
  let block = Buffer.create 64 in
  Hpack.Encoder.encode (Hpack.Encoder.create ()) block
    [
      (":method", "GET");
      (":scheme", "http");
      (":path", path);
      (":authority", "127.0.0.1");
    ];
  let b = Buffer.create 128 in
  Buffer.add_string b Frame.client_preface;
  Buffer.add_string b (frames [ Settings [] ]);
  Frame.write_field_block b ~max_frame_size:16_384 ~stream:1 ~end_stream:true
    (Buffer.contents block);
  Buffer.contents b

let rec write_all fd s off =
  if off < String.length s then
    write_all fd s (off + Unix.write_substring fd s off (String.length s - off))

let status_of fragment =
  match
    Hpack.Decoder.decode_string (Hpack.Decoder.create ())
      (Frame.payload_to_string fragment)
  with
  | Ok { pseudo = { name = ":status"; value; _ } :: _; _ } -> value
  | Ok _ -> "none"
  | Error _ -> "undecodable"

(* Frames until stream 1 ends; the server's SETTINGS acknowledged, as a
   client must (a server may otherwise give up on the connection). The
   response's first block is decoded with a fresh table: it is the
   connection's first. *)
let read_response fd =
  let chunk = Bytes.create 16_384 and pending = Buffer.create 4096 in
  let rec next () =
    let data = Buffer.to_bytes pending in
    match Frame.parse ~max_frame_size:16_777_215 data 0 (Bytes.length data) with
    | Frame (f, used) ->
        let rest = Bytes.sub_string data used (Bytes.length data - used) in
        let ended =
          match f with
          | Settings _ ->
              write_all fd (frames [ Settings_ack ]) 0;
              false
          | Headers { stream = 1; fragment; end_stream; _ } ->
              let status = status_of fragment in
              if status <> "200" then failwith ("status " ^ status);
              end_stream
          | Data { stream = 1; end_stream; _ } -> end_stream
          | Goaway _ -> failwith "GOAWAY"
          | Rst_stream _ -> failwith "RST_STREAM"
          | _ -> false
        in
        Buffer.clear pending;
        Buffer.add_string pending rest;
        if not ended then next ()
    | Invalid (v, _) ->
        failwith (Format.asprintf "%a" Braid_http2.Violation.pp v)
    | Need_more _ -> (
        match Unix.read fd chunk 0 (Bytes.length chunk) with
        | 0 -> failwith "the server closed the connection"
        | n ->
            Buffer.add_subbytes pending chunk 0 n;
            next ())
  in
  next ()

let close fds =
  List.iter (fun fd -> try Unix.close fd with Unix.Unix_error _ -> ()) fds

let batch = 200
let timeout = 10.

let open_idle ~port ~path ~count =
  let opening = opening path in
  let address = Unix.ADDR_INET (Unix.inet_addr_loopback, port) in
  let opened = ref [] in
  let step what i f =
    try f ()
    with (Failure _ | Unix.Unix_error _) as e ->
      close !opened;
      failwith
        (Printf.sprintf "h2 connection %d of %d to port %d failed (%s): %s"
           (i + 1) count port what
           (match e with
           | Unix.Unix_error (err, op, _) -> op ^ ": " ^ Unix.error_message err
           | Failure msg -> msg
           | e -> Printexc.to_string e))
  in
  let rec go first =
    if first < count then (
      let n = min batch (count - first) in
      let fds =
        List.init n (fun j ->
            step "connect" (first + j) (fun () ->
                let fd = Unix.socket PF_INET SOCK_STREAM 0 in
                opened := fd :: !opened;
                Unix.setsockopt_float fd SO_RCVTIMEO timeout;
                Unix.setsockopt_float fd SO_SNDTIMEO timeout;
                Unix.connect fd address;
                fd))
      in
      List.iteri
        (fun j fd ->
          step "request" (first + j) (fun () -> write_all fd opening 0))
        fds;
      List.iteri
        (fun j fd -> step "response" (first + j) (fun () -> read_response fd))
        fds;
      go (first + n))
  in
  go 0;
  !opened

(* A peek that would block: open and quiet. End of stream or an error: the
   server closed it. A frame (a PING, a GOAWAY) is read as open here; a
   GOAWAY is followed by a close, which a later look sees. *)
let closed_by_server fds =
  let byte = Bytes.create 1 in
  List.fold_left
    (fun closed fd ->
      Unix.set_nonblock fd;
      let is_closed =
        match Unix.recv fd byte 0 1 [ MSG_PEEK ] with
        | 0 -> true
        | _ -> false
        | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) -> false
        | exception Unix.Unix_error _ -> true
      in
      Unix.clear_nonblock fd;
      if is_closed then closed + 1 else closed)
    0 fds
