(* Braid's HPACK against libnghttp2's on the same connection's worth of field
   blocks (Corpus). Encoding: one encoder per side, as one connection, the
   corpus encoded over and over. Decoding: both sides decode the blocks
   nghttp2 encoded (the same bytes), each pass with a fresh decoder, since
   the blocks depend on the table state they were made in. *)

open Bench_harness
module Hpack = Braid_http2.Hpack

external nghttp2_encode_pass : (string * string) array array -> int -> int
  = "braid_bench_nghttp2_encode_pass"

external nghttp2_encode_blocks : (string * string) array array -> string array
  = "braid_bench_nghttp2_encode_blocks"

external nghttp2_decode_pass : string array -> int -> int
  = "braid_bench_nghttp2_decode_pass"

external nghttp2_decode_to_text : string array -> string array
  = "braid_bench_nghttp2_decode_to_text"

let text fields =
  String.concat "" (List.map (fun (n, v) -> n ^ ": " ^ v ^ "\n") fields)

let braid_encode_blocks lists =
  let encoder = Hpack.Encoder.create () in
  let b = Buffer.create 1024 in
  Array.of_list
    (List.map
       (fun fields ->
         Buffer.clear b;
         Hpack.Encoder.encode encoder b fields;
         Buffer.contents b)
       lists)

let braid_decode_to_text blocks =
  let decoder = Hpack.Decoder.create () in
  Array.map
    (fun block ->
      match Hpack.Decoder.decode_string decoder block with
      | Ok { pseudo; regular } ->
          text
            (List.map
               (fun (f : Hpack.field) -> (f.name, f.value))
               (pseudo @ regular))
      | Error e -> Format.asprintf "error: %a" Hpack.Decoder.pp_error e)
    blocks

(* Each side must read what the other wrote, field for field: a codec that
   loses a field would be fast for the wrong reason. *)
let check name lists =
  let expected = Array.of_list (List.map text lists) in
  let fail what = failwith (Printf.sprintf "hpack bench, %s: %s" name what) in
  let as_arrays = Array.of_list (List.map Array.of_list lists) in
  if braid_decode_to_text (nghttp2_encode_blocks as_arrays) <> expected then
    fail "Braid did not decode nghttp2's blocks to the fields encoded";
  if nghttp2_decode_to_text (braid_encode_blocks lists) <> expected then
    fail "nghttp2 did not decode Braid's blocks to the fields encoded"

let block_bytes blocks =
  float_of_int (Array.fold_left (fun n b -> n + String.length b) 0 blocks)
  /. float_of_int (Array.length blocks)

(* ns per block and minor words per block over [passes] passes of [blocks]
   blocks. *)
let measure ~blocks passes pass =
  Gc.full_major ();
  let minor0 = Gc.minor_words () in
  let t = time_s (fun () -> pass passes) in
  let minor1 = Gc.minor_words () in
  let n = float_of_int (passes * blocks) in
  (t *. 1e9 /. n, (minor1 -. minor0) /. n)

let calibrate target_s pass =
  let t = time_s (fun () -> pass 1) in
  max 1 (int_of_float (target_s /. Float.max t 1e-6))

let stats ~samples ~target_s ~blocks pass =
  let passes = calibrate target_s pass in
  let runs = List.init samples (fun _ -> measure ~blocks passes pass) in
  (median (List.map fst runs), median (List.map snd runs))

let sink = ref 0

let run_lists ~quick name lists =
  check name lists;
  let samples = if quick then 5 else 9 in
  let target_s = if quick then 0.05 else 0.2 in
  let blocks = List.length lists in
  let as_arrays = Array.of_list (List.map Array.of_list lists) in
  let nghttp2_blocks = nghttp2_encode_blocks as_arrays in
  let braid_encode passes =
    let encoder = Hpack.Encoder.create () in
    let b = Buffer.create 1024 in
    for _ = 1 to passes do
      List.iter
        (fun fields ->
          Buffer.clear b;
          Hpack.Encoder.encode encoder b fields;
          sink := !sink + Buffer.length b)
        lists
    done
  in
  let nghttp2_encode passes =
    sink := !sink + nghttp2_encode_pass as_arrays passes
  in
  let braid_decode passes =
    for _ = 1 to passes do
      let decoder = Hpack.Decoder.create () in
      Array.iter
        (fun block ->
          match Hpack.Decoder.decode_string decoder block with
          | Ok h -> sink := !sink + List.length h.regular
          | Error _ -> failwith "hpack bench: Braid refused a block")
        nghttp2_blocks
    done
  in
  let nghttp2_decode passes =
    sink := !sink + nghttp2_decode_pass nghttp2_blocks passes
  in
  progress "hpack: %s" name;
  (* Interleaved: each side's samples are taken between the other's. *)
  let be, bew = stats ~samples ~target_s ~blocks braid_encode in
  let ne, _ = stats ~samples ~target_s ~blocks nghttp2_encode in
  let bd, bdw = stats ~samples ~target_s ~blocks braid_decode in
  let nd, _ = stats ~samples ~target_s ~blocks nghttp2_decode in
  let be2, _ = stats ~samples ~target_s ~blocks braid_encode in
  let ne2, _ = stats ~samples ~target_s ~blocks nghttp2_encode in
  let bd2, _ = stats ~samples ~target_s ~blocks braid_decode in
  let nd2, _ = stats ~samples ~target_s ~blocks nghttp2_decode in
  let be = median [ be; be2 ] and ne = median [ ne; ne2 ] in
  let bd = median [ bd; bd2 ] and nd = median [ nd; nd2 ] in
  let braid_size = block_bytes (braid_encode_blocks lists) in
  let nghttp2_size = block_bytes nghttp2_blocks in
  [
    row ("braid encode, " ^ name) "time" be "ns/block";
    row ("nghttp2 encode, " ^ name) "time" ne "ns/block";
    ratio ("nghttp2 / braid encode time, " ^ name) (ne /. be);
    row ("braid encode, " ^ name) "minor words" bew "words/block";
    row ("braid decode, " ^ name) "time" bd "ns/block";
    row ("nghttp2 decode, " ^ name) "time" nd "ns/block";
    ratio ("nghttp2 / braid decode time, " ^ name) (nd /. bd);
    row ("braid decode, " ^ name) "minor words" bdw "words/block";
    row ("braid, " ^ name) "encoded size" braid_size "bytes/block";
    row ("nghttp2, " ^ name) "encoded size" nghttp2_size "bytes/block";
  ]

let run ~quick =
  let start = load_row "at start" in
  let rows =
    run_lists ~quick "requests" Corpus.requests
    @ run_lists ~quick "responses" Corpus.responses
  in
  (start :: rows) @ [ load_row "at end" ]

let experiment =
  {
    name = "hpack";
    summary =
      "HPACK field blocks of a browser's connection (124 requests and their \
       responses): encode and decode ns and words per block, encoded size, \
       Braid vs libnghttp2";
    run;
  }
