(* The response parser and body reader of braid_http: framing by RFC 9112
   §6.3, the smuggling refusals, limits, and the same answer under every
   chunking (property tests over generated responses and mutations). *)

open Braid_http

(* A whole stream parsed as one response: the head and its body, or the
   error, rendered as text so chunkings can be compared. *)
let render ?(meth = Method.GET) ?(limits = Limits.default) chunks =
  (* Every byte left after the response, whatever was read ahead. *)
  let rec rest input n =
    let l = Input.length input in
    Input.consume input l;
    if Input.refill input = 0 then n + l else rest input (n + l)
  in
  Input.with_chunks chunks (fun input ->
      match Response_parser.read_response ~meth input limits with
      | Error Eof -> "eof"
      | Error (Invalid e) -> Printf.sprintf "invalid %d %s" e.status e.reason
      | Ok head -> (
          let body = Response_body.create input limits head.body in
          match Response_body.to_string body with
          | Ok s ->
              Format.asprintf "%a body=%S rest=%d" Response_head.pp head s
                (rest input 0)
          | Error e ->
              Format.asprintf "%a body-error %d %s" Response_head.pp head
                e.status e.reason))

let check name expected ?meth ?limits text =
  Alcotest.(check string) name expected (render ?meth ?limits [ text ])

let ok_cases () =
  check "content-length"
    "HTTP/1.1 200 OK (Content_length 5, keep-alive) body=\"hello\" rest=0"
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  check "chunked with extensions and trailers"
    "HTTP/1.1 200 OK (Chunked, keep-alive) body=\"hello world\" rest=0"
    "HTTP/1.1 200 OK\r\n\
     Transfer-Encoding: chunked\r\n\
     \r\n\
     5;a=b\r\n\
     hello\r\n\
     6\r\n\
    \ world\r\n\
     0\r\n\
     X-T: 1\r\n\
     \r\n";
  check "until close"
    "HTTP/1.1 200 OK (Until_close, close) body=\"all of it\" rest=0"
    "HTTP/1.1 200 OK\r\n\r\nall of it";
  check "HEAD has no body whatever its length"
    "HTTP/1.1 200 OK (No_body, keep-alive) body=\"\" rest=3" ~meth:HEAD
    "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nxyz";
  check "204 has no body"
    "HTTP/1.1 204 No Content (No_body, keep-alive) body=\"\" rest=0"
    "HTTP/1.1 204 No Content\r\n\r\n";
  check "304 has no body"
    "HTTP/1.1 304 Not Modified (No_body, keep-alive) body=\"\" rest=0"
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n";
  check "2xx to CONNECT is a tunnel"
    "HTTP/1.1 200 OK (No_body, keep-alive) body=\"\" rest=4" ~meth:CONNECT
    "HTTP/1.1 200 OK\r\n\r\nTLS!";
  check "reason may be empty, its space too"
    "HTTP/1.1 200  (Content_length 1, keep-alive) body=\"x\" rest=0"
    "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx";
  check "HTTP/1.0 closes by default"
    "HTTP/1.0 200 OK (Content_length 1, close) body=\"x\" rest=0"
    "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx";
  check "HTTP/1.0 keep-alive"
    "HTTP/1.0 200 OK (Content_length 1, keep-alive) body=\"x\" rest=0"
    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx";
  check "Connection: close"
    "HTTP/1.1 200 OK (Content_length 1, close) body=\"x\" rest=0"
    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
  check "a repeated equal length is one length"
    "HTTP/1.1 200 OK (Content_length 2, keep-alive) body=\"ab\" rest=0"
    "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab";
  check "the next response stays in the input"
    "HTTP/1.1 200 OK (Content_length 1, keep-alive) body=\"a\" rest=19"
    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n\r\n";
  check "a closed connection" "eof" ""

let refused () =
  let refuse name reason ?meth ?limits text =
    check name ("invalid 502 " ^ reason) ?meth ?limits text
  in
  refuse "CL and TE" "both Content-Length and Transfer-Encoding"
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
  refuse "TE and CL, other order" "both Content-Length and Transfer-Encoding"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
  refuse "CL and TE, even on a 204" "both Content-Length and Transfer-Encoding"
    "HTTP/1.1 204 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n";
  refuse "differing lengths" "conflicting Content-Length values"
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
  refuse "differing lengths in a list" "conflicting Content-Length values"
    "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n";
  refuse "signed length" "invalid Content-Length"
    "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n";
  refuse "hex length" "invalid Content-Length"
    "HTTP/1.1 200 OK\r\nContent-Length: 0x5\r\n\r\n";
  refuse "TE in HTTP/1.0" "Transfer-Encoding in an HTTP/1.0 response"
    "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  refuse "chunked twice" "chunked applied twice"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n";
  refuse "gzip, chunked" "unsupported transfer coding"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
  refuse "chunked, gzip" "unsupported transfer coding"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n";
  refuse "TE: chunked with a parameter" "invalid Transfer-Encoding"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1\r\n\r\n";
  refuse "empty TE" "empty Transfer-Encoding"
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n";
  refuse "HTTP/2 status line" "HTTP version not supported"
    "HTTP/2.0 200 OK\r\n\r\n";
  refuse "status 600" "status code out of range" "HTTP/1.1 600 What\r\n\r\n";
  refuse "two-digit status" "malformed status code" "HTTP/1.1 20 OK\r\n\r\n";
  refuse "status letters" "malformed status code" "HTTP/1.1 2x0 OK\r\n\r\n";
  refuse "no space after the code" "malformed status line"
    "HTTP/1.1 200OK\r\n\r\n";
  refuse "lowercase http" "malformed status line" "http/1.1 200 OK\r\n\r\n";
  refuse "a control in the reason" "invalid character in reason phrase"
    "HTTP/1.1 200 O\001K\r\n\r\n";
  refuse "bare CR in the reason" "bare CR" "HTTP/1.1 200 O\rK\r\n\r\n";
  refuse "obs-fold" "obs-fold (line folding) is not allowed"
    "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n";
  refuse "space before the colon" "whitespace before the colon"
    "HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n";
  refuse "head cut short" "response head truncated"
    "HTTP/1.1 200 OK\r\nA: b\r\n";
  refuse "status line cut short" "status line truncated" "HTTP/1.1 200";
  let limits = { Limits.default with max_header_fields = 2 } in
  refuse "too many fields" "too many header fields" ~limits
    "HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
  let limits = { Limits.default with max_header_bytes = 20 } in
  refuse "header section too large" "header section too large" ~limits
    "HTTP/1.1 200 OK\r\nA: 12345678901234567890\r\n\r\n";
  let limits = { Limits.default with max_request_line = 10 } in
  refuse "status line too long" "status line too long" ~limits
    "HTTP/1.1 200 OKAY THEN\r\n\r\n";
  let limits = { Limits.default with max_body = 4 } in
  refuse "declared body above the limit" "response body too large" ~limits
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

let body_errors () =
  let prefix = "HTTP/1.1 200 OK (Chunked, keep-alive) body-error 502 " in
  let chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" in
  check "bad chunk size" (prefix ^ "invalid chunk size") (chunked ^ "zz\r\n");
  check "negative chunk size"
    (prefix ^ "invalid chunk size")
    (chunked ^ "-5\r\nhello\r\n0\r\n\r\n");
  check "chunk size overflow"
    (prefix ^ "chunk too large")
    (chunked ^ "fffffffffffffffffffff\r\n");
  check "missing CRLF after data"
    (prefix ^ "missing line ending after chunk data")
    (chunked ^ "2\r\nabc\r\n0\r\n\r\n");
  check "chunked cut short" (prefix ^ "body truncated") (chunked ^ "5\r\nhe");
  check "content-length cut short"
    "HTTP/1.1 200 OK (Content_length 5, keep-alive) body-error 502 body \
     truncated"
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe";
  let limits = { Limits.default with max_body = 4 } in
  check "until-close body above the limit"
    "HTTP/1.1 200 OK (Until_close, close) body-error 502 response body too \
     large"
    ~limits "HTTP/1.1 200 OK\r\n\r\nhello";
  check "chunked body above the limit"
    "HTTP/1.1 200 OK (Chunked, keep-alive) body-error 502 body too large: \
     limit 4 bytes"
    ~limits
    (chunked ^ "5\r\nhello\r\n0\r\n\r\n")

(* {1 Properties} *)

let random_token rng =
  let alphabet = "abcdefghijklmnopqrstuvwxyz-ABCXYZ0123456789" in
  String.init
    (1 + Random.State.int rng 10)
    (fun _ -> alphabet.[Random.State.int rng (String.length alphabet)])

let random_body rng =
  String.init (Random.State.int rng 300) (fun _ ->
      Char.chr (Random.State.int rng 256))

(* A valid response with a random framing. *)
let random_response rng =
  let status =
    [| 200; 201; 204; 301; 304; 404; 500; 503 |].(Random.State.int rng 8)
  in
  let fields =
    List.init (Random.State.int rng 6) (fun _ ->
        Printf.sprintf "%s: %s\r\n" (random_token rng) (random_token rng))
  in
  let body = random_body rng in
  let framing, encoded =
    match Random.State.int rng 3 with
    | 0 -> (Printf.sprintf "Content-Length: %d\r\n" (String.length body), body)
    | 1 ->
        let b = Buffer.create 64 in
        let rec chunks i =
          if i < String.length body then (
            let n =
              min (1 + Random.State.int rng 50) (String.length body - i)
            in
            Printf.bprintf b "%x\r\n%s\r\n" n (String.sub body i n);
            chunks (i + n))
        in
        chunks 0;
        Buffer.add_string b "0\r\n\r\n";
        ("Transfer-Encoding: chunked\r\n", Buffer.contents b)
    | _ -> ("", body)
  in
  Printf.sprintf "HTTP/1.1 %d %s\r\n%s%s\r\n%s" status (Status.reason status)
    (String.concat "" fields) framing encoded

let random_chunks rng text =
  let rec go i acc =
    if i >= String.length text then List.rev acc
    else
      let n = min (1 + Random.State.int rng 20) (String.length text - i) in
      go (i + n) (String.sub text i n :: acc)
  in
  go 0 []

(* Flip, insert or drop a few bytes, favouring those of the framing. *)
let mutate rng text =
  let b = Buffer.create (String.length text + 8) in
  let specials = [| "\r"; "\n"; ":"; " "; "0"; "-"; ","; "chunked"; "\000" |] in
  String.iter
    (fun c ->
      match Random.State.int rng 60 with
      | 0 -> ()
      | 1 -> Buffer.add_string b specials.(Random.State.int rng 9)
      | 2 -> Buffer.add_char b (Char.chr (Random.State.int rng 256))
      | _ -> Buffer.add_char b c)
    text;
  Buffer.contents b

let property_chunking () =
  let rng = Random.State.make [| 35 |] in
  for _ = 1 to 2000 do
    let text = random_response rng in
    let whole = render [ text ] in
    if String.starts_with ~prefix:"invalid" whole then
      Alcotest.failf "a valid response was refused: %S -> %s" text whole;
    let bytes =
      List.init (String.length text) (fun i -> String.make 1 text.[i])
    in
    Alcotest.(check string) "byte by byte" whole (render bytes);
    Alcotest.(check string)
      "random chunks" whole
      (render (random_chunks rng text))
  done

let property_mutations () =
  let rng = Random.State.make [| 3535 |] in
  for _ = 1 to 5000 do
    let text = mutate rng (random_response rng) in
    (* No exception escapes, and the answer does not depend on chunking. *)
    let whole = render [ text ] in
    Alcotest.(check string)
      "mutated, random chunks" whole
      (render (random_chunks rng text))
  done

let () =
  Alcotest.run "response parser"
    [
      ( "framing",
        [
          Alcotest.test_case "accepted" `Quick ok_cases;
          Alcotest.test_case "refused" `Quick refused;
          Alcotest.test_case "body errors" `Quick body_errors;
        ] );
      ( "properties",
        [
          Alcotest.test_case "chunking does not matter" `Quick property_chunking;
          Alcotest.test_case "mutations never raise" `Quick property_mutations;
        ] );
    ]
