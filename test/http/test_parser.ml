(* Unit tests of the request parser and body reader. Every check runs the
   input whole, in 64-byte chunks and in 1-byte chunks, and requires the same
   answer from all three. *)

open Braid_http
open Parse_driver

let feedings = [ Whole; Chunks 64; Chunks 1 ]

(* The outcome lines of a stream, identical under every feeding. *)
let outcomes ?limits s =
  let results =
    List.map (fun f -> (f, fst (parse_stream ?limits f s))) feedings
  in
  let _, reference = List.hd results in
  List.iter
    (fun (f, lines) ->
      Alcotest.(check (list string))
        ("same outcome " ^ feeding_name f)
        reference lines)
    results;
  reference

(* The first request's outcome under [feeding]. *)
let first ?(limits = Limits.default) feeding s =
  let go input = Request_parser.read_request input limits in
  match feeding with
  | Whole -> Input.with_string s go
  | Chunks n -> Input.with_chunks (split n s) go
  | Sizes _ -> assert false

let request ?limits s =
  match List.map (fun f -> (f, first ?limits f s)) feedings with
  | (_, Ok r) :: rest ->
      List.iter
        (fun (f, o) ->
          match o with
          | Ok r' ->
              Alcotest.(check string)
                ("same request " ^ feeding_name f)
                (describe_request r) (describe_request r')
          | Error _ -> Alcotest.failf "%s: error" (feeding_name f))
        rest;
      r
  | (_, Error (Invalid e)) :: _ ->
      Alcotest.failf "expected a request, got %a" Parse_error.pp e
  | (_, Error Eof) :: _ -> Alcotest.fail "expected a request, got Eof"
  | [] -> assert false

let rejects ?limits ?close ?reason status s =
  List.iter
    (fun f ->
      let name = feeding_name f in
      match first ?limits f s with
      | Error (Invalid e) ->
          Alcotest.(check int) (name ^ " status") status e.status;
          Option.iter
            (fun c -> Alcotest.(check bool) (name ^ " close") c e.close)
            close;
          Option.iter
            (fun r -> Alcotest.(check string) (name ^ " reason") r e.reason)
            reason
      | Error Eof -> Alcotest.failf "%s: Eof, expected %d" name status
      | Ok r ->
          Alcotest.failf "%s: accepted %s, expected %d" name
            (describe_request r) status)
    feedings

let get = "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"

(* {1 Valid requests} *)

let chrome =
  "GET /search?q=ocaml+effects&hl=en HTTP/1.1\r\n\
   Host: www.example.com\r\n\
   Connection: keep-alive\r\n\
   sec-ch-ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\"\r\n\
   sec-ch-ua-mobile: ?0\r\n\
   Upgrade-Insecure-Requests: 1\r\n\
   User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like \
   Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
   Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n\
   Accept-Encoding: gzip, deflate, br, zstd\r\n\
   Accept-Language: en-GB,en;q=0.9\r\n\
   Cookie: session=abc123; theme=dark\r\n\
   \r\n"

let test_chrome_get () =
  let r = request chrome in
  Alcotest.(check string) "target" "/search?q=ocaml+effects&hl=en" r.target;
  Alcotest.(check bool) "GET" true (r.meth = GET);
  Alcotest.(check bool) "1.1" true (r.version = Http_1_1);
  Alcotest.(check bool) "origin" true (r.target_form = Origin_form);
  Alcotest.(check bool) "no body" true (r.body = No_body);
  Alcotest.(check bool) "keep-alive" true r.keep_alive;
  Alcotest.(check int) "fields" 10 (Headers.length r.headers);
  Alcotest.(check (option string))
    "case-insensitive" (Some "www.example.com") (Request.header r "HOST");
  Alcotest.(check (option string))
    "cookie" (Some "session=abc123; theme=dark")
    (Request.header r "cookie");
  Alcotest.(check string)
    "name case kept" "User-Agent" (Headers.name r.headers 5)

let test_value_whitespace () =
  let r =
    request "GET / HTTP/1.1\r\nHost:example.com\r\nX-A: \t a b \t\r\n\r\n"
  in
  Alcotest.(check (option string))
    "no OWS" (Some "example.com") (Request.header r "host");
  Alcotest.(check (option string))
    "trimmed" (Some "a b") (Request.header r "x-a");
  let r =
    request "GET / HTTP/1.1\r\nHost: h\r\nX-Empty:\r\nX-Blank:   \r\n\r\n"
  in
  Alcotest.(check (option string))
    "empty" (Some "")
    (Request.header r "x-empty");
  Alcotest.(check (option string))
    "blank" (Some "")
    (Request.header r "x-blank")

let test_obs_text () =
  let r = request "GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xc3\xa9\r\n\r\n" in
  Alcotest.(check (option string))
    "obs-text kept" (Some "caf\xc3\xa9")
    (Request.header r "x-name")

let test_lf_only_and_blank_lines () =
  let r = request "\r\n\nGET /a HTTP/1.1\nHost: h\n\n" in
  Alcotest.(check string) "target" "/a" r.target;
  Alcotest.(check (list string))
    "stream"
    [
      "GET / origin HTTP/1.1 no-body keep-alive [Host: example.com] body=\"\" \
       trailers=[]";
      "eof";
    ]
    (outcomes ("\r\n" ^ get ^ "\r\n"))

let test_versions () =
  let r = request "GET / HTTP/1.0\r\n\r\n" in
  Alcotest.(check bool) "1.0 without Host" true (r.version = Http_1_0);
  Alcotest.(check bool) "1.0 closes by default" false r.keep_alive;
  let r = request "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n" in
  Alcotest.(check bool) "1.0 keep-alive" true r.keep_alive;
  let r =
    request "GET / HTTP/1.1\r\nHost: h\r\nConnection: foo, close\r\n\r\n"
  in
  Alcotest.(check bool) "1.1 close" false r.keep_alive;
  let r = request "GET / HTTP/1.9\r\nHost: h\r\n\r\n" in
  Alcotest.(check bool) "1.9 read as 1.1" true (r.version = Http_1_1)

let test_methods () =
  List.iter
    (fun m ->
      let target =
        match m with
        | Method.CONNECT -> "example.com:443"
        | OPTIONS -> "*"
        | _ -> "/"
      in
      let r =
        request
          (Printf.sprintf "%s %s HTTP/1.1\r\nHost: h\r\n\r\n"
             (Method.to_string m) target)
      in
      Alcotest.(check string)
        "method" (Method.to_string m) (Method.to_string r.meth))
    [ GET; HEAD; POST; PUT; DELETE; CONNECT; OPTIONS; TRACE; PATCH ]

let test_target_forms () =
  let form s = (request s).target_form in
  Alcotest.(check bool)
    "absolute" true
    (form "GET http://example.com/x?y HTTP/1.1\r\nHost: example.com\r\n\r\n"
    = Absolute_form);
  Alcotest.(check bool)
    "authority" true
    (form "CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n"
    = Authority_form);
  Alcotest.(check bool)
    "asterisk" true
    (form "OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n" = Asterisk_form);
  rejects 400 "GET * HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT / HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT user@h:80 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT h: HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT :443 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT h%zz:443 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT [::1:443 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "CONNECT ::1:443 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET ?x HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET 1http://x/ HTTP/1.1\r\nHost: h\r\n\r\n"

(* {1 Point 2 of the issue: every rejection, with its exact status} *)

let test_malformed_request_line () =
  rejects ~close:true 400 "GET /\r\nHost: h\r\n\r\n";
  rejects 400 "GET  / HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET / HTTP/1.1 \r\nHost: h\r\n\r\n";
  rejects 400 " GET / HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "G(ET / HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET / http/1.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET / HTTP/1.10\r\nHost: h\r\n\r\n";
  rejects 400 "GET / HTTP/1\r\nHost: h\r\n\r\n";
  rejects 400 "GET / HTTP/a.1\r\nHost: h\r\n\r\n";
  rejects 400 "GET /\r\n\r\n";
  rejects ~reason:"malformed request line" 400 "GET\r\n\r\n"

let test_malformed_header () =
  rejects ~close:true 400 "GET / HTTP/1.1\r\nHost: h\r\nNo colon here\r\n\r\n";
  rejects 400 "GET / HTTP/1.1\r\nHost: h\r\n: empty name\r\n\r\n";
  rejects 400 "GET / HTTP/1.1\r\nHost: h\r\nBad(name): x\r\n\r\n";
  rejects 400 "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x01b\r\n\r\n";
  rejects 400 "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x7fb\r\n\r\n"

let test_whitespace_before_colon () =
  rejects ~close:true ~reason:"whitespace before the colon" 400
    "GET / HTTP/1.1\r\nHost : h\r\n\r\n";
  rejects ~reason:"whitespace before the colon" 400
    "GET / HTTP/1.1\r\nHost: h\r\nX-A\t: b\r\n\r\n"

let test_obs_fold () =
  rejects ~close:true ~reason:"obs-fold (line folding) is not allowed" 400
    "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n  folded\r\n\r\n";
  rejects ~reason:"obs-fold (line folding) is not allowed" 400
    "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tfolded\r\n\r\n"

(* RFC 9112 §2.2: "A recipient that receives whitespace between the
   start-line and the first header field MUST either reject the message as
   invalid or consume each whitespace-preceded line without further
   processing of it." Braid rejects it. *)
let test_whitespace_before_first_field () =
  rejects ~close:true ~reason:"obs-fold (line folding) is not allowed" 400
    "GET / HTTP/1.1\r\n\tHost: h\r\n\r\n";
  rejects ~close:true ~reason:"obs-fold (line folding) is not allowed" 400
    "GET / HTTP/1.1\r\n Host: h\r\n\r\n"

let test_bare_cr () =
  rejects ~reason:"bare CR" 400 "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n";
  rejects ~reason:"bare CR" 400 "GET /\r HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects ~reason:"bare CR" 400 "GET / HTTP/1.1\r\r\nHost: h\r\n\r\n";
  rejects ~reason:"bare CR" 400 "GET / HTTP/1.1\r\nHost: h\r\nX\r: a\r\n\r\n";
  rejects ~reason:"bare CR" 400 "GET / HTTP/1.1\r\nHost: h\r\r\n\r\n";
  rejects ~reason:"bare CR" 400 "GET / HTTP/1.1\r\nHost: h\r\n\r\r\n"

let test_nul () =
  rejects ~reason:"NUL character" 400
    "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\000b\r\n\r\n";
  rejects ~reason:"NUL character" 400 "GET /\000 HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects ~reason:"NUL character" 400 "GET / HTTP/1.1\r\nHo\000st: h\r\n\r\n";
  rejects ~reason:"NUL character" 400 "\000GET / HTTP/1.1\r\nHost: h\r\n\r\n"

let test_host () =
  rejects ~reason:"missing Host" ~close:false 400 "GET / HTTP/1.1\r\n\r\n";
  rejects ~reason:"several Host fields" ~close:false 400
    "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n";
  rejects ~reason:"several Host fields" 400
    "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n";
  (* A refused request with a body cannot be skipped cheaply: close. *)
  rejects ~reason:"missing Host" ~close:true 400
    "POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
  rejects ~reason:"missing Host" ~close:true 400
    "GET / HTTP/1.1\r\nConnection: close\r\n\r\n"

(* RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code
   to any ... request message that contains ... a Host header field with an
   invalid field value": Host = uri-host [ ":" port ] (RFC 9110 §7.2), the
   host of RFC 3986 §3.2.2. *)
let test_host_value_is_uri_host_and_port () =
  let get host = Printf.sprintf "GET / HTTP/1.1\r\nHost: %s\r\n\r\n" host in
  List.iter
    (fun host ->
      Alcotest.(check (option string))
        ("valid: " ^ host) (Some host)
        (Request.header (request (get host)) "host"))
    [
      "example.com";
      "EXAMPLE.com:8080";
      "127.0.0.1";
      "localhost:";
      "[::1]:";
      "xn--caf-dma.example";
      "a%2Db.example";
      "under_score~tilde.example";
      "a-very-long-host-name-0123456789.example.org";
      "abcdefgh";
      "abcdefghi";
      "abcdefgh.EXAMPLE.org";
      "!$&'()*+,;=";
      "[::1]";
      "[::1]:8443";
      "[2001:db8::1]";
      "[2001:DB8:0:0:8:800:200C:417A]";
      "[::ffff:192.0.2.1]";
      "[1::]";
      "[v1.fe:80]";
      "";
    ];
  List.iter
    (fun host ->
      rejects ~close:false ~reason:"invalid Host" 400 (get host);
      rejects ~close:true ~reason:"invalid Host" 400
        (Printf.sprintf
           "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 1\r\n\r\nx" host))
    [
      "a b";
      "a\tb";
      "user@example.com";
      "example.com/path";
      "example.com?q";
      "example.com#f";
      "example.com:80a";
      "example.com:80:80";
      "a%zz";
      "a%2";
      "caf\xc3\xa9.example";
      "abcdefgh.example\xc3\xa9";
      "abcdefghijklmnop/";
      "abcdefghijklmno@p";
      "\"example.com\"";
      "::1";
      "[::1";
      "[::1]x";
      "[1:2:3:4:5:6:7:8:9]";
      "[1:2:3:4:5:6:7]";
      "[1::2::3]";
      "[12345::]";
      "[:1::]";
      "[1:::2]";
      "[::1.2.3.256]";
      "[::1.2.3]";
      "[::01.2.3.4]";
      "[g::]";
      "[v1.]";
      "[vx.a]";
      "[]";
    ];
  rejects ~reason:"invalid Host" 400
    "GET / HTTP/1.0\r\nHost: user@example.com\r\n\r\n"

let test_content_length () =
  let length s =
    (request (Printf.sprintf "POST / HTTP/1.1\r\nHost: h\r\n%s\r\n" s)).body
  in
  Alcotest.(check bool)
    "single" true
    (length "Content-Length: 42\r\n" = Content_length 42);
  Alcotest.(check bool)
    "repeated field" true
    (length "Content-Length: 42\r\nContent-Length: 42\r\n" = Content_length 42);
  Alcotest.(check bool)
    "repeated in a list" true
    (length "Content-Length: 42 , 42\r\n" = Content_length 42);
  Alcotest.(check bool) "zero" true (length "Content-Length: 0\r\n" = No_body);
  let post s = Printf.sprintf "POST / HTTP/1.1\r\nHost: h\r\n%s\r\n" s in
  rejects ~close:true ~reason:"conflicting Content-Length values" 400
    (post "Content-Length: 4\r\nContent-Length: 5\r\n");
  rejects ~reason:"conflicting Content-Length values" 400
    (post "Content-Length: 4, 5\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length: -1\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length: +1\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length: 1a\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length:\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length: 4,\r\n");
  rejects ~reason:"invalid Content-Length" 400 (post "Content-Length: 0x10\r\n")

let test_transfer_encoding () =
  let post ?(v = "1.1") s =
    Printf.sprintf "POST / HTTP/%s\r\nHost: h\r\n%s\r\n0\r\n\r\n" v s
  in
  Alcotest.(check bool)
    "chunked" true
    ((request (post "Transfer-Encoding: Chunked\r\n")).body = Chunked);
  Alcotest.(check bool)
    "empty elements" true
    ((request (post "Transfer-Encoding: , chunked\r\n")).body = Chunked);
  rejects ~close:true ~reason:"both Content-Length and Transfer-Encoding" 400
    (post "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n");
  rejects ~reason:"both Content-Length and Transfer-Encoding" 400
    (post "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n");
  rejects ~close:true ~reason:"unsupported transfer coding" 501
    (post "Transfer-Encoding: gzip, chunked\r\n");
  rejects ~reason:"chunked applied twice" 400
    (post "Transfer-Encoding: chunked, chunked\r\n");
  rejects ~reason:"empty Transfer-Encoding" 400 (post "Transfer-Encoding: \r\n");
  rejects ~close:true ~reason:"Transfer-Encoding in an HTTP/1.0 request" 400
    (post ~v:"1.0" "Transfer-Encoding: chunked\r\n")

(* RFC 9112 §6.3: "If a Transfer-Encoding header field is present in a
   request and the chunked transfer coding is not the final encoding, ... the
   server MUST respond with the 400 (Bad Request) status code and then close
   the connection." Not 501: the body's length is unknown, whatever the
   coding. *)
let test_chunked_not_final_is_400 () =
  let post s =
    Printf.sprintf "POST / HTTP/1.1\r\nHost: h\r\n%s\r\n0\r\n\r\n" s
  in
  rejects ~close:true ~reason:"final transfer coding is not chunked" 400
    (post "Transfer-Encoding: gzip\r\n");
  rejects ~close:true ~reason:"final transfer coding is not chunked" 400
    (post "Transfer-Encoding: chunked, gzip\r\n");
  rejects ~close:true ~reason:"final transfer coding is not chunked" 400
    (post "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n");
  rejects ~close:true ~reason:"final transfer coding is not chunked" 400
    (post "Transfer-Encoding: identity\r\n")

(* RFC 9112 §6.1: Transfer-Encoding = #transfer-coding, each a token with
   optional parameters (§7); chunked defines none, and "their presence SHOULD
   be treated as an error". A value that is not that list leaves the framing
   unknown: 400, not 501 (an unknown but well-formed coding). *)
let test_transfer_coding_is_a_token () =
  let post s =
    Printf.sprintf "POST / HTTP/1.1\r\nHost: h\r\n%s\r\n0\r\n\r\n" s
  in
  List.iter
    (fun value ->
      rejects ~close:true ~reason:"invalid Transfer-Encoding" 400
        (post ("Transfer-Encoding: " ^ value ^ "\r\n")))
    [
      "\"gzip\", chunked";
      "g zip, chunked";
      "gzip;, chunked";
      "x/y, chunked";
      "chunked;q=1";
      "chunked ;x";
      "\"chunked\"";
    ];
  rejects ~close:true ~reason:"unsupported transfer coding" 501
    (post "Transfer-Encoding: gzip;level=9, chunked\r\n");
  rejects ~close:true ~reason:"unsupported transfer coding" 501
    (post "Transfer-Encoding: x-custom ; a=\"1\" , chunked\r\n")

(* RFC 9110 §5.6.1.2: "A recipient MUST parse and ignore a reasonable number
   of empty list elements", in every list field Braid reads: Connection,
   Transfer-Encoding and Expect. *)
let test_empty_list_elements_ignored () =
  let r =
    request "GET / HTTP/1.1\r\nHost: h\r\nConnection: , ,close,\r\n\r\n"
  in
  Alcotest.(check bool) "Connection: , ,close," false r.keep_alive;
  let r = request "GET / HTTP/1.0\r\nConnection: keep-alive , ,\r\n\r\n" in
  Alcotest.(check bool) "Connection: keep-alive , ," true r.keep_alive;
  let r =
    request
      "POST / HTTP/1.1\r\n\
       Host: h\r\n\
       Transfer-Encoding: , chunked, ,\r\n\
       \r\n\
       0\r\n\
       \r\n"
  in
  Alcotest.(check bool) "Transfer-Encoding: , chunked, ," true (r.body = Chunked);
  let r =
    request
      "PUT / HTTP/1.1\r\n\
       Host: h\r\n\
       Expect: ,,100-continue\r\n\
       Content-Length: 1\r\n\
       \r\n\
       x"
  in
  Alcotest.(check bool) "Expect: ,,100-continue" true r.expect_continue

let test_version_not_supported () =
  rejects ~close:true 505 "GET / HTTP/2.0\r\nHost: h\r\n\r\n";
  rejects 505 "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  rejects 505 "GET / HTTP/3.0\r\nHost: h\r\n\r\n";
  rejects 505 "GET / HTTP/0.9\r\nHost: h\r\n\r\n"

let long n = String.make n 'a'

let test_request_line_limit () =
  let line target = Printf.sprintf "GET /%s HTTP/1.1" target in
  let at_limit = line (long (8192 - String.length (line ""))) in
  Alcotest.(check int) "8 KiB" 8192 (String.length at_limit);
  ignore (request (at_limit ^ "\r\nHost: h\r\n\r\n"));
  rejects ~close:true ~reason:"request line too long" 414
    (line (long (8193 - String.length (line ""))) ^ "\r\nHost: h\r\n\r\n");
  (* Refused without waiting for the end of the line. *)
  rejects 414 ("GET /" ^ long 100_000);
  let limits = { Limits.default with max_request_line = 100 } in
  rejects ~limits 414 (line (long 100) ^ "\r\nHost: h\r\n\r\n")

let test_header_limits () =
  let with_fields n =
    "GET / HTTP/1.1\r\nHost: h\r\n"
    ^ String.concat "" (List.init (n - 1) (Printf.sprintf "X-%d: v\r\n"))
    ^ "\r\n"
  in
  Alcotest.(check int)
    "100 fields" 100
    (Headers.length (request (with_fields 100)).headers);
  rejects ~close:true ~reason:"too many header fields" 431 (with_fields 101);
  let limits = { Limits.default with max_header_fields = 3 } in
  rejects ~limits 431 (with_fields 4);
  (* 64 KiB of section: the field lines with their CRLFs and the final
     CRLF. *)
  let section n =
    let filler = n - String.length "Host: h\r\nX: \r\n\r\n" in
    "GET / HTTP/1.1\r\nHost: h\r\nX: " ^ long filler ^ "\r\n\r\n"
  in
  ignore (request (section 65536));
  rejects ~close:true ~reason:"header section too large" 431 (section 65537);
  rejects 431 ("GET / HTTP/1.1\r\nHost: h\r\nX: " ^ long 200_000)

let test_unknown_method () =
  rejects ~close:false ~reason:"unknown method" 501
    "BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects 501 "get / HTTP/1.1\r\nHost: h\r\n\r\n";
  rejects ~close:true 501
    "BREW /pot HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx";
  rejects ~close:true 501 "BREW /pot HTTP/1.0\r\n\r\n";
  (* Not a token: 400, not 501. *)
  rejects 400 "BR{W /pot HTTP/1.1\r\nHost: h\r\n\r\n";
  (* A refused request that was read whole leaves the next one intact. *)
  Alcotest.(check (list string))
    "pipelined after 501"
    [
      "error 501 unknown method";
      "GET / origin HTTP/1.1 no-body keep-alive [Host: example.com] body=\"\" \
       trailers=[]";
      "eof";
    ]
    (outcomes ("BREW / HTTP/1.1\r\nHost: h\r\n\r\n" ^ get))

let test_body_limit () =
  let limits = { Limits.default with max_body = 10 } in
  ignore
    (request ~limits "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n");
  rejects ~limits ~close:true ~reason:"body too large: limit 10 bytes" 413
    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n";
  rejects 413
    "POST / HTTP/1.1\r\n\
     Host: h\r\n\
     Content-Length: 99999999999999999999999\r\n\
     \r\n";
  let chunked body =
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" ^ body
  in
  Alcotest.(check (list string))
    "chunked at the limit"
    [
      "POST / origin HTTP/1.1 chunked keep-alive [Host: h; Transfer-Encoding: \
       chunked] body=\"0123456789\" trailers=[]";
      "eof";
    ]
    (outcomes ~limits (chunked "5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n"));
  Alcotest.(check (list string))
    "chunked over the limit"
    [
      "POST / origin HTTP/1.1 chunked keep-alive [Host: h; Transfer-Encoding: \
       chunked] / body error 413 body too large: limit 10 bytes (close)";
    ]
    (outcomes ~limits (chunked "5\r\n01234\r\n6\r\n56789a\r\n0\r\n\r\n"));
  Alcotest.(check (list string))
    "huge chunk size"
    [
      "POST / origin HTTP/1.1 chunked keep-alive [Host: h; Transfer-Encoding: \
       chunked] / body error 413 chunk too large (close)";
    ]
    (outcomes (chunked "fffffffffffffffffffff\r\n"))

(* {1 Streams: pipelining, bodies, end of input} *)

let test_pipelined () =
  let stream =
    get ^ "POST /form HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
    ^ "PUT /c HTTP/1.1\r\n\
       Host: h\r\n\
       Transfer-Encoding: chunked\r\n\
       \r\n\
       3\r\n\
       abc\r\n\
       0\r\n\
       \r\n" ^ get
  in
  Alcotest.(check (list string))
    "four requests"
    [
      "GET / origin HTTP/1.1 no-body keep-alive [Host: example.com] body=\"\" \
       trailers=[]";
      "POST /form origin HTTP/1.1 length=5 keep-alive [Host: h; \
       Content-Length: 5] body=\"hello\" trailers=[]";
      "PUT /c origin HTTP/1.1 chunked keep-alive [Host: h; Transfer-Encoding: \
       chunked] body=\"abc\" trailers=[]";
      "GET / origin HTTP/1.1 no-body keep-alive [Host: example.com] body=\"\" \
       trailers=[]";
      "eof";
    ]
    (outcomes stream)

let chunked_post body =
  "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" ^ body

let test_chunked_extensions_trailers () =
  Alcotest.(check (list string))
    "extensions and trailers"
    [
      "POST /up origin HTTP/1.1 chunked keep-alive [Host: h; \
       Transfer-Encoding: chunked] body=\"hello, world\" trailers=[Digest: \
       sha=x; X-Count: 2]";
      "eof";
    ]
    (outcomes
       (chunked_post
          "5;name=value\r\n\
           hello\r\n\
           7 ; a ; b = \"q \\\" ;x\" ;c=d\r\n\
           , world\r\n\
           000;last\r\n\
           Digest: sha=x\r\n\
           X-Count: 2\r\n\
           \r\n"));
  Alcotest.(check (list string))
    "upper-case hex, LF only"
    [
      "POST /up origin HTTP/1.1 chunked keep-alive [Host: h; \
       Transfer-Encoding: chunked] body=\"0123456789abcdefghijklmnopqrstuv\" \
       trailers=[]";
      "eof";
    ]
    (outcomes
       (chunked_post "1A\n0123456789abcdefghijklmnop\n6\r\nqrstuv\r\n0\n\n"))

let test_chunked_errors () =
  let body_error reason =
    [
      "POST /up origin HTTP/1.1 chunked keep-alive [Host: h; \
       Transfer-Encoding: chunked] / body error " ^ reason;
    ]
  in
  let check name reason body =
    Alcotest.(check (list string))
      name (body_error reason)
      (outcomes (chunked_post body))
  in
  check "no size" "400 missing chunk size (close)" "\r\n";
  check "bad size" "400 invalid chunk size (close)" "x\r\n";
  check "bad extension" "400 invalid chunk extension (close)"
    "5 x\r\nhello\r\n0\r\n\r\n";
  check "empty extension name" "400 invalid chunk extension name (close)"
    "5;\r\nhello\r\n0\r\n\r\n";
  check "empty extension value" "400 invalid chunk extension value (close)"
    "5;a=\r\nhello\r\n0\r\n\r\n";
  check "open quote" "400 unterminated quoted chunk extension (close)"
    "5;a=\"x\r\nhello\r\n0\r\n\r\n";
  check "no CRLF after data" "400 missing line ending after chunk data (close)"
    "5\r\nhelloX\r\n0\r\n\r\n";
  check "truncated data" "400 body truncated (close)" "5\r\nhel";
  check "truncated trailers" "400 body truncated (close)" "0\r\nX: y\r\n";
  check "bad trailer" "400 whitespace before the colon (close)"
    "0\r\nX : y\r\n\r\n";
  check "bare CR in size line" "400 bare CR (close)"
    "5\r;\r\nhello\r\n0\r\n\r\n";
  check "long size line" "400 chunk-size line too long (close)"
    ("5;" ^ String.make 5000 'a' ^ "\r\nhello\r\n0\r\n\r\n")

let test_fixed_body_truncated () =
  Alcotest.(check (list string))
    "truncated"
    [
      "POST / origin HTTP/1.1 length=10 keep-alive [Host: h; Content-Length: \
       10] / body error 400 body truncated (close)";
    ]
    (outcomes "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nshort")

let test_eof () =
  Alcotest.(check (list string)) "empty" [ "eof" ] (outcomes "");
  Alcotest.(check (list string)) "blank lines" [ "eof" ] (outcomes "\r\n\r\n");
  Alcotest.(check (list string))
    "truncated line"
    [ "error 400 request line truncated (close)" ]
    (outcomes "GET / HT");
  Alcotest.(check (list string))
    "truncated head"
    [ "error 400 request head truncated (close)" ]
    (outcomes "GET / HTTP/1.1\r\nHost: h\r\n");
  Alcotest.(check (list string))
    "after a request"
    [
      "GET / origin HTTP/1.1 no-body keep-alive [Host: example.com] body=\"\" \
       trailers=[]";
      "error 400 request line truncated (close)";
    ]
    (outcomes (get ^ "GET"))

let test_drain_then_next () =
  let stream =
    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 300\r\n\r\n"
    ^ String.make 300 'x'
    ^ chunked_post "3\r\nabc\r\n0\r\nT: 1\r\n\r\n"
    ^ get
  in
  List.iter
    (fun f ->
      let targets =
        let input_fn input =
          let rec loop acc =
            match Request_parser.read_request input Limits.default with
            | Ok r -> (
                let body = Request_body.create input Limits.default r.body in
                match Request_body.drain body with
                | Ok () ->
                    Alcotest.(check bool)
                      "finished" true
                      (Request_body.is_finished body);
                    loop (r.target :: acc)
                | Error e -> Alcotest.failf "%a" Parse_error.pp e)
            | Error Eof -> List.rev acc
            | Error (Invalid e) -> Alcotest.failf "%a" Parse_error.pp e
          in
          loop []
        in
        match f with
        | Whole -> Input.with_string stream input_fn
        | Chunks n -> Input.with_chunks (split n stream) input_fn
        | Sizes _ -> assert false
      in
      Alcotest.(check (list string))
        (feeding_name f) [ "/"; "/up"; "/" ] targets)
    feedings

let test_read_in_pieces () =
  (* Small reads see every byte once, in order, whatever the chunking. *)
  let data = String.init 1000 (fun i -> Char.chr (32 + (i mod 90))) in
  let stream =
    chunked_post
      (String.concat ""
         (List.map
            (fun piece ->
              Printf.sprintf "%x\r\n%s\r\n" (String.length piece) piece)
            (split 333 data))
      ^ "0\r\n\r\n")
  in
  List.iter
    (fun f ->
      let got =
        let go input =
          match Request_parser.read_request input Limits.default with
          | Ok r ->
              let body = Request_body.create input Limits.default r.body in
              let out = Buffer.create 1000 and buf = Bytes.create 7 in
              let rec loop () =
                match Request_body.read body buf 0 7 with
                | Ok 0 -> Buffer.contents out
                | Ok n ->
                    Alcotest.(check bool) "at most len" true (n <= 7);
                    Buffer.add_subbytes out buf 0 n;
                    loop ()
                | Error e -> Alcotest.failf "%a" Parse_error.pp e
              in
              loop ()
          | Error _ -> Alcotest.fail "head"
        in
        match f with
        | Whole -> Input.with_string stream go
        | Chunks n -> Input.with_chunks (split n stream) go
        | Sizes _ -> assert false
      in
      Alcotest.(check string) (feeding_name f) data got)
    feedings

(* {1 The refill effect} *)

(* Runs [f input] on chunks, counting [Refill] effects with a handler of
   our own. *)
let counting_refills chunks f =
  let input = Input.create () in
  let rest = ref chunks and count = ref 0 in
  let read buf off len =
    match !rest with
    | [] -> 0
    | c :: more ->
        assert (String.length c <= len);
        rest := more;
        Bytes.blit_string c 0 buf off (String.length c);
        String.length c
  in
  let result =
    Effect.Deep.try_with f input
      {
        effc =
          (fun (type a) (e : a Effect.t) ->
            match e with
            | Input.Refill i when i == input ->
                Some
                  (fun (k : (a, _) Effect.Deep.continuation) ->
                    incr count;
                    Effect.Deep.continue k (Input.fill input read))
            | _ -> None);
      }
  in
  (result, !count)

let head_only input =
  match Request_parser.read_request input Limits.default with
  | Ok r -> r.target
  | Error _ -> "error"

let test_refill_count () =
  let _, n = counting_refills [ chrome ] head_only in
  Alcotest.(check int) "whole request: one refill" 1 n;
  let eof input =
    ignore (head_only input);
    match Request_parser.read_request input Limits.default with
    | Error Eof -> "eof"
    | _ -> "not eof"
  in
  let r, n = counting_refills [ chrome ] eof in
  Alcotest.(check string) "then end of input" "eof" r;
  Alcotest.(check int) "one refill, one end-of-input check" 2 n;
  let _, n = counting_refills (split 1 chrome) head_only in
  Alcotest.(check int)
    "1-byte chunks: one refill per byte, no more" (String.length chrome) n;
  let _, n = counting_refills (split 64 chrome) head_only in
  Alcotest.(check int) "64-byte chunks" ((String.length chrome + 63) / 64) n

let test_head_before_body () =
  (* 100-continue: the head is returned without asking for the body. *)
  let head =
    "PUT /big HTTP/1.1\r\n\
     Host: h\r\n\
     Content-Length: 5\r\n\
     Expect: 100-Continue\r\n\
     \r\n"
  in
  let result, n =
    counting_refills [ head; "hello" ] (fun input ->
        match Request_parser.read_request input Limits.default with
        | Ok r -> r.expect_continue
        | Error _ -> false)
  in
  Alcotest.(check bool) "expect_continue" true result;
  Alcotest.(check int) "body not requested" 1 n;
  let r = request (String.concat "" [ head; "hello" ]) in
  Alcotest.(check bool) "detected" true r.expect_continue;
  let r =
    request
      "PUT / HTTP/1.0\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\nx"
  in
  Alcotest.(check bool) "ignored in HTTP/1.0" false r.expect_continue

(* RFC 9110 §10.1.1: Expect = #expectation, and on a 100-continue
   expectation an origin server "MUST send either an immediate response with a
   final status code ... or an immediate 100 (Continue) response". So the
   expectation is found in a list too (with the empty elements a recipient
   MUST ignore, RFC 9110 §5.6.1.2), or in a second Expect field; missed, the
   server would wait for a body the client holds back. *)
let test_expect_100_continue_in_a_list () =
  let put expect =
    Printf.sprintf "PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n%s\r\nx"
      expect
  in
  List.iter
    (fun expect ->
      Alcotest.(check bool) expect true (request (put expect)).expect_continue)
    [
      "Expect: 100-continue\r\n";
      "Expect: 100-continue,\r\n";
      "Expect: , 100-Continue ,\r\n";
      "Expect: x-unknown\r\nExpect: 100-continue\r\n";
    ];
  Alcotest.(check bool)
    "not another expectation" false
    (request (put "Expect: 100-continued\r\n")).expect_continue;
  Alcotest.(check bool)
    "Request.expect_continue_of agrees" true
    (Request.expect_continue_of Http_1_1
       (Headers.of_list
          [ ("Expect", "x-unknown"); ("expect", "100-continue,") ]))

let test_body_refills () =
  (* A head and a 3000-byte body in one chunk: one refill for both. *)
  let body = String.make 3000 'x' in
  let message =
    "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 3000\r\n\r\n" ^ body
  in
  let result, n =
    counting_refills [ message ] (fun input ->
        match Request_parser.read_request input Limits.default with
        | Ok r -> (
            match
              Request_body.to_string
                (Request_body.create input Limits.default r.body)
            with
            | Ok b -> b
            | Error _ -> "error")
        | Error _ -> "error")
  in
  Alcotest.(check int) "body read" 3000 (String.length result);
  Alcotest.(check int) "one refill" 1 n

let test_nested_inputs () =
  (* Each input's refills go to its own handler, through the inner one. *)
  let read input =
    match Request_parser.read_request input Limits.default with
    | Ok r -> r.target
    | Error _ -> "error"
  in
  let outer_refills = ref 0 in
  let targets =
    Input.with_reader
      (let sent = ref false in
       fun buf off _ ->
         incr outer_refills;
         if !sent then 0
         else (
           sent := true;
           Bytes.blit_string get 0 buf off (String.length get);
           String.length get))
      (fun outer ->
        Input.with_chunks (split 5 "GET /inner HTTP/1.1\r\nHost: h\r\n\r\n")
          (fun inner ->
            let a = read inner in
            let b = read outer in
            [ a; b ]))
  in
  Alcotest.(check (list string)) "targets" [ "/inner"; "/" ] targets;
  Alcotest.(check int) "outer refills" 1 !outer_refills

exception Socket_error

let test_reader_exception () =
  let calls = ref 0 in
  (* The first read gives the start of a request line, so that the parser
     needs a second one: the bytes must be written, since a buffer's
     previous contents could hold an LF and end the line early. *)
  let read buf off _ =
    incr calls;
    if !calls = 1 then (
      Bytes.blit_string "GET" 0 buf off 3;
      3)
    else raise Socket_error
  in
  match
    Input.with_reader read (fun input ->
        Request_parser.read_request input Limits.default)
  with
  | _ -> Alcotest.fail "the reader's exception was swallowed"
  | exception Socket_error -> ()

(* An input with its own reader refills with no handler: no effect is
   performed (one would be unhandled here), the reader is called once per
   refill, and a body is read through it as well. *)
let test_own_reader () =
  let message =
    "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world"
  in
  (* A pipelined request follows: the body must stop at its length. *)
  let next = "GET /next HTTP/1.1\r\nHost: h\r\n\r\n" in
  let chunks = ref (split 7 (message ^ next)) in
  let read buf off len =
    match !chunks with
    | [] -> 0
    | chunk :: rest ->
        let n = min len (String.length chunk) in
        Bytes.blit_string chunk 0 buf off n;
        chunks :=
          if n < String.length chunk then
            String.sub chunk n (String.length chunk - n) :: rest
          else rest;
        n
  in
  let input = Input.create ~size:16 ~read () in
  match Request_parser.read_request input Limits.default with
  | Ok req -> (
      Alcotest.(check string) "target" "/upload" req.target;
      let body = Request_body.create input Limits.default req.body in
      let buf = Bytes.create 64 and got = Buffer.create 16 in
      let rec all () =
        match Request_body.read body buf 0 64 with
        | Ok 0 -> ()
        | Ok n ->
            Buffer.add_subbytes got buf 0 n;
            all ()
        | Error (e : Parse_error.t) -> Alcotest.failf "body: %s" e.reason
      in
      all ();
      Alcotest.(check string) "body" "hello world" (Buffer.contents got);
      match Request_parser.read_request input Limits.default with
      | Ok req -> Alcotest.(check string) "the next request" "/next" req.target
      | Error _ -> Alcotest.fail "the next request was refused")
  | Error _ -> Alcotest.fail "the request was refused"

(* Under a Braid scheduler, the read function may block its fiber (as a
   socket read will), and a cancellation raised there unwinds the parser. *)
let test_reader_blocks_fiber () =
  let target, refills =
    Braid_fifo.run (fun () ->
        let box = Braid_sync.Mvar.create_empty () in
        let producer =
          Braid.Fiber.fork (fun () ->
              List.iter (Braid_sync.Mvar.put box) (split 100 chrome))
        in
        let refills = ref 0 in
        let read buf off len =
          incr refills;
          let chunk = Braid_sync.Mvar.take box in
          assert (String.length chunk <= len);
          Bytes.blit_string chunk 0 buf off (String.length chunk);
          String.length chunk
        in
        let target = Input.with_reader read head_only in
        Braid.Fiber.join producer;
        (target, !refills))
  in
  Alcotest.(check string) "parsed" "/search?q=ocaml+effects&hl=en" target;
  Alcotest.(check int)
    "one refill per chunk"
    ((String.length chrome + 99) / 100)
    refills

let test_cancelled_in_reader () =
  let outcome =
    Braid_fifo.run (fun () ->
        let never = Braid_sync.Mvar.create_empty () in
        let parser =
          Braid.Fiber.fork (fun () ->
              Input.with_reader
                (fun _ _ _ -> Braid_sync.Mvar.take never)
                (fun input -> Request_parser.read_request input Limits.default))
        in
        Braid.Fiber.yield ();
        Braid.Fiber.cancel parser;
        match Braid.Fiber.join parser with
        | _ -> "returned"
        | exception Braid.Cancelled -> "cancelled")
  in
  Alcotest.(check string) "Cancelled propagates" "cancelled" outcome

let test_helpers () =
  let h =
    Headers.of_list [ ("Connection", "Upgrade, Keep-Alive"); ("X", "1") ]
  in
  Alcotest.(check bool)
    "has_token" true
    (Headers.has_token h "connection" "keep-alive");
  Alcotest.(check bool) "keep-alive 1.0" true (Request.keep_alive_of Http_1_0 h);
  Alcotest.(check bool) "keep-alive 1.1" true (Request.keep_alive_of Http_1_1 h);
  let h = Headers.of_list [ ("connection", "close") ] in
  Alcotest.(check bool) "close" false (Request.keep_alive_of Http_1_1 h);
  Alcotest.(check bool)
    "expect" true
    (Request.expect_continue_of Http_1_1
       (Headers.of_list [ ("Expect", "100-continue") ]));
  Alcotest.(check (list string))
    "find_all" [ "1"; "2" ]
    (Headers.find_all
       (Headers.of_list [ ("a", "1"); ("B", "x"); ("A", "2") ])
       "a");
  Alcotest.(check (option string))
    "method" (Some "PATCH")
    (Option.map Method.to_string (Method.of_string "PATCH"));
  Alcotest.(check bool) "method case" true (Method.of_string "Get" = None)

(* The scans of names, targets and line ends go a word at a time, and read
   past the line into the rest of the buffer: random names and targets of
   every length around a word, from bytes picked to sit on each edge of the
   tricks (a "-" then ",", bytes from 0x7f up, "^" and "~", controls), must
   get the answer the grammar gives byte by byte. *)
let tricky = "aZz09-_.!~^`|,-,:; \t\127\128\255\000@/?%\"(){}[]\\+*#$&'=AKk"

let random_string rng ~max =
  String.init
    (Random.State.int rng (max + 1))
    (fun _ -> tricky.[Random.State.int rng (String.length tricky)])

(* [s] parses under every feeding iff [valid], and then [check]s. *)
let parsed_iff ~what ~valid s check =
  List.iter
    (fun f ->
      match first f s with
      | Ok r ->
          if not valid then
            Alcotest.failf "%s: %s accepted" (feeding_name f) what;
          check r
      | Error (Invalid _) ->
          if valid then Alcotest.failf "%s: %s refused" (feeding_name f) what
      | Error Eof -> Alcotest.fail "Eof")
    feedings

let test_word_scans () =
  let rng = Random.State.make [| 28 |] in
  for _ = 1 to 1500 do
    (* A field name (no ":": it would end the name early, and the rest would
       make the value; a space or tab before the colon is refused), then a
       target. *)
    let name =
      String.map
        (fun c -> if c = ':' then ';' else c)
        (random_string rng ~max:20)
    in
    parsed_iff
      ~what:(Printf.sprintf "name %S" name)
      ~valid:(String.length name > 0 && String.for_all Headers.is_tchar name)
      (Printf.sprintf "GET /x HTTP/1.1\r\nHost: h\r\n%s: v\r\n\r\n" name)
      (fun r ->
        Alcotest.(check (option string))
          "the field" (Some "v")
          (Headers.find r.headers name));
    let target = "/" ^ random_string rng ~max:20 in
    parsed_iff
      ~what:(Printf.sprintf "target %S" target)
      ~valid:(String.for_all (fun c -> c >= '\x21' && c <= '\x7e') target)
      (Printf.sprintf "GET %s HTTP/1.1\r\nHost: h\r\n\r\n" target)
      (fun r -> Alcotest.(check string) "the target" target r.target)
  done

let () =
  Alcotest.run "http parser"
    [
      ( "valid",
        [
          Alcotest.test_case "browser GET" `Quick test_chrome_get;
          Alcotest.test_case "word-at-a-time scans" `Quick test_word_scans;
          Alcotest.test_case "value whitespace" `Quick test_value_whitespace;
          Alcotest.test_case "obs-text" `Quick test_obs_text;
          Alcotest.test_case "LF only, blank lines" `Quick
            test_lf_only_and_blank_lines;
          Alcotest.test_case "versions, keep-alive" `Quick test_versions;
          Alcotest.test_case "methods" `Quick test_methods;
          Alcotest.test_case "target forms" `Quick test_target_forms;
          Alcotest.test_case "helpers" `Quick test_helpers;
          Alcotest.test_case "empty list elements ignored" `Quick
            test_empty_list_elements_ignored;
        ] );
      ( "rejected",
        [
          Alcotest.test_case "malformed request line" `Quick
            test_malformed_request_line;
          Alcotest.test_case "malformed header" `Quick test_malformed_header;
          Alcotest.test_case "whitespace before colon" `Quick
            test_whitespace_before_colon;
          Alcotest.test_case "obs-fold" `Quick test_obs_fold;
          Alcotest.test_case "whitespace before the first field" `Quick
            test_whitespace_before_first_field;
          Alcotest.test_case "bare CR" `Quick test_bare_cr;
          Alcotest.test_case "NUL" `Quick test_nul;
          Alcotest.test_case "Host" `Quick test_host;
          Alcotest.test_case "Host value is uri-host [:port]" `Quick
            test_host_value_is_uri_host_and_port;
          Alcotest.test_case "Content-Length" `Quick test_content_length;
          Alcotest.test_case "Transfer-Encoding" `Quick test_transfer_encoding;
          Alcotest.test_case "chunked not final is 400" `Quick
            test_chunked_not_final_is_400;
          Alcotest.test_case "transfer coding is a token" `Quick
            test_transfer_coding_is_a_token;
          Alcotest.test_case "505" `Quick test_version_not_supported;
          Alcotest.test_case "414" `Quick test_request_line_limit;
          Alcotest.test_case "431" `Quick test_header_limits;
          Alcotest.test_case "501 unknown method" `Quick test_unknown_method;
          Alcotest.test_case "413" `Quick test_body_limit;
        ] );
      ( "streams",
        [
          Alcotest.test_case "pipelined" `Quick test_pipelined;
          Alcotest.test_case "chunked extensions, trailers" `Quick
            test_chunked_extensions_trailers;
          Alcotest.test_case "chunked errors" `Quick test_chunked_errors;
          Alcotest.test_case "truncated body" `Quick test_fixed_body_truncated;
          Alcotest.test_case "end of input" `Quick test_eof;
          Alcotest.test_case "drain, then next" `Quick test_drain_then_next;
          Alcotest.test_case "small reads" `Quick test_read_in_pieces;
        ] );
      ( "refill",
        [
          Alcotest.test_case "count" `Quick test_refill_count;
          Alcotest.test_case "head before body" `Quick test_head_before_body;
          Alcotest.test_case "Expect: 100-continue in a list" `Quick
            test_expect_100_continue_in_a_list;
          Alcotest.test_case "reader exception" `Quick test_reader_exception;
          Alcotest.test_case "an input with its own reader" `Quick
            test_own_reader;
          Alcotest.test_case "body in the same refill" `Quick test_body_refills;
          Alcotest.test_case "nested inputs" `Quick test_nested_inputs;
          Alcotest.test_case "reader blocks its fiber" `Quick
            test_reader_blocks_fiber;
          Alcotest.test_case "cancelled in the reader" `Quick
            test_cancelled_in_reader;
        ] );
    ]
