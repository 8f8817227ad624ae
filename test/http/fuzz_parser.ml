(* Crowbar fuzz test of the request parser and body reader. In the default
   (quickcheck) mode it runs a bounded number of random cases; under
   afl-fuzz it explores for as long as it is given.

   For every input: no exception escapes, the parser stops (a bounded number
   of refills: it never keeps asking after end of input), and the outcome
   is the same whether the input comes whole, in 64-byte, 1-byte or random
   chunks. *)

open Braid_http
open Parse_driver

(* {1 Near-valid streams}

   Crowbar's nested generators shrink towards trivial values as they nest,
   so structured streams are drawn here from a seed: well-formed requests
   with consistent framing, some parts swapped for invalid ones, then a few
   bytes mutated and the stream maybe cut short. Mutations then land in every
   state of the parser, bodies and trailers included. *)

let one rng l = List.nth l (Random.State.int rng (List.length l))
let chance rng p = Random.State.float rng 1. < p

let meth rng =
  if chance rng 0.9 then one rng [ "GET"; "POST"; "PUT"; "PATCH"; "DELETE" ]
  else one rng [ "OPTIONS"; "CONNECT"; "BREW"; "get"; "G(T"; "" ]

let target rng =
  if chance rng 0.2 then "/" ^ String.make (Random.State.int rng 100) 'p'
  else if chance rng 0.9 then one rng [ "/"; "/index.html?a=1"; "http://h/x" ]
  else one rng [ "*"; "h:443"; "/\000"; "/a b"; "/\r"; "" ]

let version rng =
  if chance rng 0.9 then one rng [ "HTTP/1.1"; "HTTP/1.1"; "HTTP/1.0" ]
  else one rng [ "HTTP/2.0"; "HTTP/1.9"; "HTTP/1"; "http/1.1" ]

let eol rng =
  if chance rng 0.9 then "\r\n" else one rng [ "\n"; "\r"; ""; "\r\r\n" ]

let field rng =
  if chance rng 0.2 then "X-Long: " ^ String.make (Random.State.int rng 100) 'v'
  else if chance rng 0.85 then
    one rng
      [
        "Accept: */*";
        "Connection: keep-alive";
        "Connection: close";
        "Expect: 100-continue";
        "Cookie: a=b; c=d";
        "Host: h";
      ]
  else
    one rng
      [
        "Bad Name: x";
        " folded";
        "X : y";
        "X: a\rb";
        "X: a\000b";
        "Content-Length: 4, 5";
        "Content-Length: -1";
        "Transfer-Encoding: gzip, chunked";
        "Transfer-Encoding: chunked, gzip";
        "no colon";
        ": empty";
      ]

let extension rng =
  if chance rng 0.6 then ""
  else
    one rng
      [
        ";e=1";
        " ; a = \"q\\\"\" ;b";
        ";";
        ";=x";
        ";a=";
        ";a=\"\\";
        ";a=\"\r";
        " x";
        ";" ^ String.make 40 'e';
      ]

let framing rng =
  match Random.State.int rng 3 with
  | 0 -> ("", "")
  | 1 ->
      let n = Random.State.int rng 70 in
      let announced = if chance rng 0.9 then n else Random.State.int rng 70 in
      (Printf.sprintf "Content-Length: %d\r\n" announced, String.make n 'b')
  | _ ->
      let chunk () =
        let n = 1 + Random.State.int rng 40 in
        let size = if chance rng 0.95 then Printf.sprintf "%x" n else "z" in
        size ^ extension rng ^ eol rng ^ String.make n 'c' ^ eol rng
      in
      let chunks = List.init (Random.State.int rng 4) (fun _ -> chunk ()) in
      let trailers =
        List.init (Random.State.int rng 3) (fun _ -> field rng ^ eol rng)
      in
      ( "Transfer-Encoding: chunked\r\n",
        String.concat "" chunks ^ "0" ^ extension rng ^ eol rng
        ^ String.concat "" trailers ^ eol rng )

let request rng =
  let host = if chance rng 0.85 then "Host: h\r\n" else "" in
  let fields =
    List.init (Random.State.int rng 5) (fun _ -> field rng ^ eol rng)
  in
  let framing, body = framing rng in
  let blank = if chance rng 0.05 then "\r\n" else "" in
  blank ^ meth rng ^ " " ^ target rng ^ " " ^ version rng ^ eol rng ^ host
  ^ String.concat "" fields ^ framing ^ eol rng ^ body

let mutate rng s =
  let s = Bytes.of_string s in
  let n = Bytes.length s in
  if n > 0 then
    for _ = 1 to Random.State.int rng 3 do
      Bytes.set s (Random.State.int rng n) (Char.chr (Random.State.int rng 256))
    done;
  Bytes.to_string s

let near_valid seed =
  let rng = Random.State.make [| seed |] in
  let s =
    String.concat ""
      (List.init (1 + Random.State.int rng 3) (fun _ -> request rng))
  in
  let s = if chance rng 0.3 then mutate rng s else s in
  if chance rng 0.2 then
    String.sub s 0 (Random.State.int rng (String.length s + 1))
  else s

let stream =
  Crowbar.(
    choose
      [
        bytes;
        map [ int ] near_valid;
        map [ int; int ] (fun a b -> near_valid a ^ near_valid b);
      ])

(* Small limits, so that every limit is crossed often. *)
let small_limits =
  Crowbar.(
    map
      [ range 60; range 300; range 8; range 100; range 30 ]
      (fun line header fields body chunk ->
        {
          Limits.max_request_line = line;
          max_header_bytes = header;
          max_header_fields = fields;
          max_body = body;
          max_chunk_line = chunk;
        }))

let check_stream limits s sizes =
  let len = String.length s in
  let pp = Crowbar.(pp_list pp_string) in
  (* One refill per byte at most, plus one that finds the end of input: the
     parser never asks again after the end (the driver stops there). *)
  let run feeding = parse_stream ~limits ~max_refills:(len + 1) feeding s in
  let whole, _ = run Whole in
  let by_byte, refills = run (Chunks 1) in
  let by_64, _ = run (Chunks 64) in
  let random, _ = run (Sizes sizes) in
  Crowbar.check_eq ~pp whole by_byte;
  Crowbar.check_eq ~pp whole by_64;
  Crowbar.check_eq ~pp whole random;
  Crowbar.check (refills <= len + 1)

let () =
  Crowbar.add_test ~name:"default limits"
    Crowbar.[ stream; list (range 100) ]
    (fun s sizes -> check_stream Limits.default s sizes);
  Crowbar.add_test ~name:"small limits"
    Crowbar.[ small_limits; stream; list (range 100) ]
    check_stream
