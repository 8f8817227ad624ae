module Frame = Braid_http2.Frame
module Hpack = Braid_http2.Hpack
module Idle_clients = Bench_scale.Idle_clients

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
              Idle_clients.write_all fd (frames [ Settings_ack ]) 0;
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

type t = Idle_clients.t

let open_idle ~port ~path ~count =
  Idle_clients.open_with ~kind:"h2 connection" ~opening:(opening path)
    ~read_response ~port ~count

let closed_by_server = Idle_clients.closed_by_server
let close = Idle_clients.close
