(* Encodes and decodes the field blocks of a typical HTTP/2 exchange:
   [hpack_block.exe CASE N] runs CASE N times and prints the time per
   block. Under callgrind, the instructions of a run of N less those of a
   run of 0 are N blocks' (start-up cancels out):

   valgrind --tool=callgrind hpack_block.exe encode 100000

   The cases:
   - [encode]: braid serve's response to a file, the same block again and
     again on one connection (the steady state: every field indexed);
   - [encode-cold]: the same on a fresh encoder each time (literals,
     Huffman-coded);
   - [decode]: h2load's request (nghttp2 indexes every field), decoded
     again and again by one decoder;
   - [decode-cold]: the first such block, on a fresh decoder each time. *)

open Braid_http2

let response =
  [
    (":status", "200");
    ("date", "Sat, 28 Nov 2026 10:05:14 GMT");
    ("content-length", "1024");
    ("content-type", "text/plain");
    ("accept-ranges", "bytes");
    ("etag", "\"9b009f-400-661534c054e3f\"");
    ("last-modified", "Sat, 28 Nov 2026 10:04:05 GMT");
  ]

let request =
  [
    (":method", "GET");
    (":path", "/1k.txt");
    (":scheme", "http");
    (":authority", "127.0.0.1:8080");
    ("accept", "*/*");
    ("accept-encoding", "gzip, deflate");
    ("user-agent", "h2load nghttp2/1.52.0");
  ]

(* The request as nghttp2 sends it: every field indexed. *)
let request_blocks =
  let e = Hpack.Encoder.create () in
  let block () =
    let b = Buffer.create 128 in
    Hpack.Encoder.encode ~indexing:(fun _ _ -> Hpack.Incremental) e b request;
    Buffer.contents b
  in
  let first = block () in
  (first, block ())

let () =
  let case = Sys.argv.(1) and n = int_of_string Sys.argv.(2) in
  let b = Buffer.create 256 in
  let check = ref 0 in
  let t0 = Unix.gettimeofday () in
  (match case with
  | "encode" ->
      let e = Hpack.Encoder.create () in
      for _ = 1 to n do
        Buffer.clear b;
        Hpack.Encoder.encode e b response;
        check := !check + Buffer.length b
      done
  | "encode-cold" ->
      for _ = 1 to n do
        Buffer.clear b;
        Hpack.Encoder.encode (Hpack.Encoder.create ()) b response;
        check := !check + Buffer.length b
      done
  | "decode" | "decode-cold" ->
      let first, steady = request_blocks in
      let d = Hpack.Decoder.create () in
      ignore (Hpack.Decoder.decode_string d first);
      for _ = 1 to n do
        let d, block =
          if case = "decode" then (d, steady)
          else (Hpack.Decoder.create (), first)
        in
        match Hpack.Decoder.decode_string d block with
        | Ok h -> check := !check + List.length h.regular
        | Error _ -> failwith "decode"
      done
  | _ -> failwith "hpack_block: encode | encode-cold | decode | decode-cold");
  let dt = Unix.gettimeofday () -. t0 in
  Printf.printf "%s: %d blocks, %.1f ns per block (check %d)\n" case n
    (if n = 0 then 0. else dt /. float n *. 1e9)
    !check
