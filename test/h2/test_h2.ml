(* HTTP/2 with real clients against the braid binary: h2spec (every test,
   over h2c and over TLS by ALPN), curl --http2 and --http2-prior-knowledge,
   and a raw client speaking frames for the abuse limits. Each abuse test
   runs a server whose limit is set low, and checks the answer the limit
   gives (GOAWAY ENHANCE_YOUR_CALM, REFUSED_STREAM, 431, a reset): without
   the limit, none comes and the test fails. Times are only generous
   deadlines. *)

module Frame = Braid_http2.Frame
module Hpack = Braid_http2.Hpack

let binary = "../../bin/main.exe"

let read_file path =
  let ic = open_in_bin path in
  Fun.protect
    ~finally:(fun () -> close_in ic)
    (fun () -> really_input_string ic (in_channel_length ic))

let temp_dir =
  let d = Filename.temp_dir "braid-h2" "" in
  at_exit (fun () ->
      ignore (Sys.command (Filename.quote_command "rm" [ "-rf"; d ])));
  d

let root =
  let r = Filename.concat temp_dir "root" in
  Unix.mkdir r 0o755;
  let write name text =
    let oc = open_out_bin (Filename.concat r name) in
    output_string oc text;
    close_out oc
  in
  write "index.html" "hello over h2\n";
  write "big.bin" (String.init 300_000 (fun i -> Char.chr (i * 7 land 255)));
  r

let certificate =
  lazy
    (let cert = Filename.concat temp_dir "cert.pem"
     and key = Filename.concat temp_dir "key.pem" in
     let status =
       Sys.command
         (Filename.quote_command "openssl" ~stdout:"/dev/null"
            ~stderr:"/dev/null"
            [
              "req";
              "-x509";
              "-newkey";
              "ec";
              "-pkeyopt";
              "ec_paramgen_curve:P-256";
              "-keyout";
              key;
              "-out";
              cert;
              "-days";
              "2";
              "-nodes";
              "-subj";
              "/CN=localhost";
            ])
     in
     if status <> 0 then Alcotest.fail "openssl could not make a certificate";
     (cert, key))

let free_port () =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.bind s (ADDR_INET (Unix.inet_addr_loopback, 0));
  let port =
    match Unix.getsockname s with ADDR_INET (_, p) -> p | _ -> assert false
  in
  Unix.close s;
  port

let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  s

let rec wait_listening port n =
  match connect port with
  | s -> Unix.close s
  | exception Unix.Unix_error _ ->
      if n = 0 then Alcotest.fail "the server did not start";
      Unix.sleepf 0.02;
      wait_listening port (n - 1)

(* Runs the braid binary (demo routes, [root]) with [flags] for [f ~pid
   ~port ~tls_port] (the TLS port when [tls]). *)
let serving_process ?(tls = false) flags f =
  let port = free_port () and tls_port = free_port () in
  let tls_flags =
    if tls then
      let cert, key = Lazy.force certificate in
      [
        "--tls-cert";
        cert;
        "--tls-key";
        key;
        "--tls-port";
        string_of_int tls_port;
      ]
    else []
  in
  let argv =
    [
      binary;
      "serve";
      "--demo";
      "--log-level";
      "debug";
      "--root";
      root;
      "-p";
      string_of_int port;
    ]
    @ tls_flags @ flags
  in
  let log =
    Unix.openfile "h2-server.log" [ O_WRONLY; O_CREAT; O_APPEND ] 0o600
  in
  let pid =
    Unix.create_process binary (Array.of_list argv) Unix.stdin log log
  in
  Unix.close log;
  Fun.protect
    ~finally:(fun () ->
      (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
      ignore (Unix.waitpid [] pid))
    (fun () ->
      wait_listening port 250;
      if tls then wait_listening tls_port 250;
      f ~pid ~port ~tls_port)

let serving ?tls flags f =
  serving_process ?tls flags (fun ~pid:_ ~port ~tls_port -> f ~port ~tls_port)

(* {1 A raw client} *)

type conn = { fd : Unix.file_descr; buf : Buffer.t; mutable ended : bool }

let send c s =
  let b = Bytes.unsafe_of_string s in
  let rec go off =
    if off < Bytes.length b then
      match Unix.write c.fd b off (Bytes.length b - off) with
      | n -> go (off + n)
      | exception Unix.Unix_error ((EPIPE | ECONNRESET), _, _) ->
          c.ended <- true
  in
  go 0

let frames fs =
  let b = Buffer.create 256 in
  List.iter (Frame.write b) fs;
  Buffer.contents b

let open_h2 ?(settings = []) port =
  let fd = connect port in
  Unix.setsockopt_float fd SO_RCVTIMEO 15.;
  let c = { fd; buf = Buffer.create 4096; ended = false } in
  send c (Frame.client_preface ^ frames [ Settings settings ]);
  c

(* The next frame from the server; [None] at its end (or a reset). *)
let rec next_frame c =
  let data = Buffer.to_bytes c.buf in
  match Frame.parse ~max_frame_size:16_777_215 data 0 (Bytes.length data) with
  | Frame (f, used) ->
      let f =
        (* Copied out: the buffer is about to change. *)
        match f with
        | Frame.Data d ->
            Frame.Data
              {
                d with
                data = Frame.payload_of_string (Frame.payload_to_string d.data);
              }
        | Headers h ->
            Headers
              {
                h with
                fragment =
                  Frame.payload_of_string (Frame.payload_to_string h.fragment);
              }
        | f -> f
      in
      let rest = Bytes.sub_string data used (Bytes.length data - used) in
      Buffer.clear c.buf;
      Buffer.add_string c.buf rest;
      Some f
  | Invalid (v, _) ->
      Alcotest.failf "the server sent %a" Braid_http2.Violation.pp v
  | Need_more _ -> (
      let chunk = Bytes.create 65536 in
      match Unix.read c.fd chunk 0 65536 with
      | 0 -> None
      | n ->
          Buffer.add_subbytes c.buf chunk 0 n;
          next_frame c
      | exception Unix.Unix_error ((ECONNRESET | EPIPE), _, _) -> None
      | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) ->
          Alcotest.fail "the server neither answered nor closed in 15 s")

(* Reads frames until [stop] says it has what it waits for. *)
let rec until c what stop =
  match next_frame c with
  | None -> Alcotest.failf "connection closed before %s" what
  | Some f -> ( match stop f with Some v -> v | None -> until c what stop)

(* The GOAWAY's code and debug text (the server puts its reason there). *)
let goaway c =
  let rec go () =
    match next_frame c with
    | None -> None
    | Some (Goaway { code; debug; _ }) -> Some (code, debug)
    | Some _ -> go ()
  in
  go ()

let goaway_code c = Option.map fst (goaway c)

let request_block ?(encoder = Hpack.Encoder.create ()) ?(extra = []) meth path =
  let b = Buffer.create 64 in
  Hpack.Encoder.encode encoder b
    ([
       (":method", meth);
       (":scheme", "http");
       (":path", path);
       (":authority", "localhost");
     ]
    @ extra);
  Buffer.contents b

let headers ?(end_stream = true) ?encoder ?extra stream meth path =
  let b = Buffer.create 64 in
  Frame.write_field_block b ~max_frame_size:16384 ~stream ~end_stream
    (request_block ?encoder ?extra meth path);
  Buffer.contents b

let status_of decoder fragment =
  match
    Hpack.Decoder.decode_string decoder (Frame.payload_to_string fragment)
  with
  | Ok { pseudo = { name = ":status"; value; _ } :: _; _ } ->
      int_of_string value
  | Ok _ -> Alcotest.fail "a response without :status"
  | Error e -> Alcotest.failf "a response block: %a" Hpack.Decoder.pp_error e

let code = Alcotest.testable Braid_http2.Error_code.pp ( = )

(* {1 Conformance} *)

let contains s sub =
  match Str.search_forward (Str.regexp_string sub) s 0 with
  | _ -> true
  | exception Not_found -> false

let h2spec_count output =
  (* "145 tests, 145 passed, 0 skipped, 0 failed" *)
  let re =
    Str.regexp
      "\\([0-9]+\\) tests, \\([0-9]+\\) passed, \\([0-9]+\\) skipped, \
       \\([0-9]+\\) failed"
  in
  match Str.search_forward re output 0 with
  | _ ->
      ( int_of_string (Str.matched_group 1 output),
        int_of_string (Str.matched_group 2 output) )
  | exception Not_found -> Alcotest.failf "h2spec said:\n%s" output

let run_capture argv =
  let out = Filename.temp_file "braid-h2" ".out" in
  let status =
    Sys.command
      (Filename.quote_command (List.hd argv) (List.tl argv) ~stdout:out
         ~stderr:out)
  in
  let text = read_file out in
  Sys.remove out;
  (status, text)

let h2spec =
  List.find_opt Sys.file_exists [ "/usr/local/bin/h2spec"; "/usr/bin/h2spec" ]

let h2spec_over ~tls () =
  match h2spec with
  | None ->
      Alcotest.fail "h2spec is not installed (scripts/setup.sh installs it)"
  | Some h2spec ->
      serving ~tls [] (fun ~port ~tls_port ->
          let args =
            if tls then [ "-t"; "-k"; "-p"; string_of_int tls_port ]
            else [ "-p"; string_of_int port ]
          in
          let _status, text =
            run_capture ([ h2spec; "-h"; "127.0.0.1"; "-o"; "5" ] @ args)
          in
          let total, passed = h2spec_count text in
          (* Over h2c, 3.5/2 (a bad preface must see a bare close) is the
             one known failure: a cleartext first line that is not the
             preface is left to the HTTP/1.1 parser, which answers 400. Over
             TLS, ALPN h2 promised the preface: every test passes. *)
          let allowed =
            if tls then 0
            else if contains text "3.5. HTTP/2 Connection Preface" then 1
            else 0
          in
          if passed < total - allowed then
            Alcotest.failf "h2spec: %d of %d passed:\n%s" passed total text;
          Printf.printf "h2spec over %s: %d of %d passed\n"
            (if tls then "TLS" else "h2c")
            passed total)

(* {1 curl} *)

let curl args =
  let status, text = run_capture ("curl" :: "-sS" :: args) in
  if status <> 0 then Alcotest.failf "curl %s: %s" (String.concat " " args) text;
  text

let test_curl () =
  serving ~tls:true [] (fun ~port ~tls_port ->
      let base = Printf.sprintf "http://127.0.0.1:%d" port
      and secure = Printf.sprintf "https://127.0.0.1:%d" tls_port in
      let fmt = "%{http_version} %{http_code}" in
      Alcotest.(check string)
        "h2c by prior knowledge" "2 200"
        (curl
           [
             "--http2-prior-knowledge";
             "-o";
             "/dev/null";
             "-w";
             fmt;
             base ^ "/index.html";
           ]);
      Alcotest.(check string)
        "h2 by ALPN" "2 200"
        (curl
           [
             "-k";
             "--http2";
             "-o";
             "/dev/null";
             "-w";
             fmt;
             secure ^ "/index.html";
           ]);
      Alcotest.(check string)
        "http/1.1 by ALPN still" "1.1 200"
        (curl
           [
             "-k";
             "--http1.1";
             "-o";
             "/dev/null";
             "-w";
             fmt;
             secure ^ "/index.html";
           ]);
      Alcotest.(check string)
        "plain HTTP/1.1 beside h2c" "hello over h2\n"
        (curl [ "--http1.1"; base ^ "/index.html" ]);
      let big = read_file (Filename.concat root "big.bin") in
      let out = Filename.concat temp_dir "big.out" in
      ignore (curl [ "--http2-prior-knowledge"; "-o"; out; base ^ "/big.bin" ]);
      Alcotest.(check bool)
        "a file larger than the windows, whole" true
        (read_file out = big);
      ignore (curl [ "-k"; "--http2"; "-o"; out; secure ^ "/big.bin" ]);
      Alcotest.(check bool) "the same over TLS" true (read_file out = big);
      Alcotest.(check string)
        "a request body streamed to the handler" "olleh"
        (curl
           [
             "--http2-prior-knowledge";
             "--data-binary";
             "hello";
             base ^ "/reverse";
           ]);
      let upload = String.make 200_000 'a' ^ "b" in
      let file = Filename.concat temp_dir "upload" in
      let oc = open_out_bin file in
      output_string oc upload;
      close_out oc;
      let reversed =
        curl
          [
            "--http2-prior-knowledge";
            "--data-binary";
            "@" ^ file;
            base ^ "/reverse";
          ]
      in
      Alcotest.(check int)
        "a body past the stream window" (String.length upload)
        (String.length reversed);
      Alcotest.(check char) "reversed" 'b' reversed.[0];
      Alcotest.(check string)
        "404 through the error pages" "2 404"
        (curl
           [
             "--http2-prior-knowledge";
             "-o";
             "/dev/null";
             "-w";
             fmt;
             base ^ "/nothing";
           ]);
      (* Ten streams on one connection at once (curl 7.88 does not reuse
         an HTTP/2 connection: nghttp, of nghttp2-client, does). *)
      let urls =
        List.init 10 (fun i -> Printf.sprintf "%s/sleep/%d" base (200 + i))
      in
      let status, text = run_capture ("nghttp" :: "-nv" :: urls) in
      Alcotest.(check int) "nghttp's exit" 0 status;
      let count sub =
        let re = Str.regexp_string sub in
        let rec go i n =
          match Str.search_forward re text i with
          | j -> go (j + 1) (n + 1)
          | exception Not_found -> n
        in
        go 0 0
      in
      Alcotest.(check int) "ten responses" 10 (count ":status: 200");
      Alcotest.(check int) "one connection" 1 (count "Connected"))

(* The access log and the metrics name each request's protocol: an HTTP/2
   stream as "HTTP/2.0", not as HTTP/1.1. *)
let test_protocol_named () =
  let log = Filename.concat temp_dir "access.log" in
  serving [ "--access-log"; log; "--metrics"; "/metrics" ]
    (fun ~port ~tls_port:_ ->
      let base = Printf.sprintf "http://127.0.0.1:%d" port in
      ignore
        (curl
           [
             "--http2-prior-knowledge"; "-o"; "/dev/null"; base ^ "/index.html";
           ]);
      ignore (curl [ "--http1.1"; "-o"; "/dev/null"; base ^ "/index.html" ]);
      let metrics = curl [ "--http1.1"; base ^ "/metrics" ] in
      let sample name =
        let re = Str.regexp_string name in
        match Str.search_forward re metrics 0 with
        | i ->
            let start = i + String.length name + 1 in
            let stop = String.index_from metrics start '\n' in
            int_of_string (String.sub metrics start (stop - start))
        | exception Not_found -> Alcotest.failf "no %s in:\n%s" name metrics
      in
      Alcotest.(check int)
        "HTTP/2 requests counted" 1
        (sample {|braid_requests_by_protocol_total{protocol="HTTP/2.0"}|});
      Alcotest.(check int)
        "HTTP/1.1 requests counted (the metrics' own not yet)" 1
        (sample {|braid_requests_by_protocol_total{protocol="HTTP/1.1"}|});
      (* The log is written behind the responses: wait for both lines. *)
      let rec lines n =
        let text = if Sys.file_exists log then read_file log else "" in
        if (contains text "HTTP/2.0" && contains text "HTTP/1.1") || n = 0 then
          text
        else (
          Unix.sleepf 0.05;
          lines (n - 1))
      in
      let text = lines 100 in
      Alcotest.(check bool)
        "the access log names HTTP/2.0" true
        (contains text "\"GET /index.html HTTP/2.0\"");
      Alcotest.(check bool)
        "and HTTP/1.1" true
        (contains text "\"GET /index.html HTTP/1.1\""))

let test_off () =
  serving [ "--http2"; "off" ] (fun ~port ~tls_port:_ ->
      let status, _ =
        run_capture
          [
            "curl";
            "-sS";
            "--http2-prior-knowledge";
            Printf.sprintf "http://127.0.0.1:%d/" port;
          ]
      in
      Alcotest.(check bool) "no h2c with --http2 off" true (status <> 0))

(* {1 Abuse} *)

let test_rapid_reset () =
  serving [ "--http2-reset-budget"; "50" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      let encoder = Hpack.Encoder.create () in
      for i = 0 to 999 do
        let stream = (2 * i) + 1 in
        send c
          (headers ~encoder stream "GET" "/sleep/1000"
          ^ frames [ Rst_stream { stream; code = Cancel } ])
      done;
      Alcotest.(check (option code))
        "GOAWAY" (Some Enhance_your_calm) (goaway_code c))

(* A field block opened by HEADERS without END_HEADERS, then [pieces]
   CONTINUATION frames of [fragment] bytes (never ending it), then a PING:
   a server without the limit under test reads the PING as interrupting the
   block and answers PROTOCOL_ERROR, so each test fails at once without its
   own limit, and the reason in the GOAWAY tells the limits apart. *)
let open_block ?(flags = []) ~pieces ~fragment () =
  serving flags (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      send c
        (frames
           [
             Headers
               {
                 stream = 1;
                 end_stream = true;
                 end_headers = false;
                 priority = None;
                 fragment = Frame.payload_of_string (request_block "GET" "/");
                 pad_length = None;
               };
           ]);
      let piece =
        frames
          [
            Continuation
              {
                stream = 1;
                end_headers = false;
                fragment = Frame.payload_of_string fragment;
              };
          ]
      in
      send c (String.concat "" (List.init pieces (fun _ -> piece)));
      if not c.ended then
        send c (frames [ Ping { ack = false; data = "12345678" } ]);
      goaway c)

let check_goaway what expected got =
  let code', reason =
    match got with
    | Some (code, debug) -> (code, debug)
    | None -> Alcotest.failf "%s: no GOAWAY" what
  in
  Alcotest.(check code) (what ^ ": code") Enhance_your_calm code';
  if not (contains reason expected) then
    Alcotest.failf "%s: GOAWAY for %S, not %S" what reason expected

(* Empty fragments: only the count of frames can stop them. *)
let test_continuation_flood () =
  check_goaway "CONTINUATION flood" "too many CONTINUATION"
    (open_block ~pieces:10_000 ~fragment:"" ())

(* Forty fragments of 1000 bytes: under the count's 64 frames, past the
   block limit of twice the header list size (2 × 4096 bytes). *)
let test_block_too_large () =
  check_goaway "field block too large" "too large"
    (open_block
       ~flags:[ "--http2-max-header-list"; "4096" ]
       ~pieces:40 ~fragment:(String.make 1000 'x') ())

(* A block begun and left unfinished: the connection may carry no other
   frame meanwhile, so it ends at the head's deadline, as a slow HTTP/1.1
   head does. *)
let test_slow_block () =
  serving [ "--header-timeout"; "1" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      send c
        (frames
           [
             Headers
               {
                 stream = 1;
                 end_stream = true;
                 end_headers = false;
                 priority = None;
                 fragment = Frame.payload_of_string (request_block "GET" "/");
                 pad_length = None;
               };
           ]);
      let started = Unix.gettimeofday () in
      check_goaway "an unfinished field block" "not complete" (goaway c);
      let took = Unix.gettimeofday () -. started in
      if took > 5. then Alcotest.failf "GOAWAY after %.1f s, not about 1" took)

let test_hpack_bomb () =
  serving [ "--http2-max-header-list"; "16384" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      (* A 2 KB entry in the table (an entry over half the table would not
         be indexed), then a block naming it 200 times: 400 KB decoded
         from 203 bytes. *)
      let b = Buffer.create 5000 in
      let encoder = Hpack.Encoder.create () in
      Hpack.Encoder.encode encoder b
        [
          (":method", "GET");
          (":scheme", "http");
          (":path", "/");
          (":authority", "x");
          ("x-bomb", String.make 2000 'b');
        ];
      let first = Buffer.contents b in
      let bomb =
        (* :method GET, :scheme http, :path / from the static table, then
           index 62, the newest entry: x-bomb. *)
        "\x82\x86\x84" ^ String.make 200 (Char.chr 0xbe)
      in
      let fb s stream =
        let b = Buffer.create 64 in
        Frame.write_field_block b ~max_frame_size:16384 ~stream ~end_stream:true
          s;
        Buffer.contents b
      in
      send c (fb first 1 ^ fb bomb 3);
      let decoder = Hpack.Decoder.create () in
      let status =
        until c "the bomb's answer" (function
          | Headers { stream = 3; fragment; _ } ->
              Some (status_of decoder fragment)
          | Headers { fragment; _ } ->
              ignore (status_of decoder fragment);
              None
          | _ -> None)
      in
      Alcotest.(check int) "431" 431 status;
      (* The connection goes on. *)
      send c (headers 5 "GET" "/index.html");
      let status =
        until c "the next answer" (function
          | Headers { stream = 5; fragment; _ } ->
              Some (status_of decoder fragment)
          | Headers { fragment; _ } ->
              (* Stream 1's answer may come after the 431: every block is
                 decoded, in order, or the tables fall out of step. *)
              ignore (status_of decoder fragment);
              None
          | _ -> None)
      in
      Alcotest.(check int) "then 200" 200 status)

let flood name frame () =
  serving [ "--http2-control-budget"; "200" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      let one = frames [ frame ] in
      let batch = String.concat "" (List.init 100 (fun _ -> one)) in
      for _ = 1 to 50 do
        if not c.ended then send c batch
      done;
      Alcotest.(check (option code))
        (name ^ ": GOAWAY") (Some Enhance_your_calm) (goaway_code c))

let test_zero_window () =
  serving [ "--send-timeout"; "1" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 ~settings:[ Initial_window_size 0 ] port in
      send c (headers 1 "GET" "/big.bin");
      let decoder = Hpack.Decoder.create () in
      let reset =
        until c "a reset" (function
          | Rst_stream { stream = 1; code } -> Some code
          | Data { stream = 1; _ } -> Alcotest.fail "DATA past a zero window"
          | Headers { fragment; _ } ->
              ignore (status_of decoder fragment);
              None
          | _ -> None)
      in
      Alcotest.(check code) "the stalled stream is reset" Cancel reset;
      (* The connection still serves. *)
      send c
        (frames [ Settings [ Initial_window_size 65535 ] ]
        ^ headers 3 "GET" "/index.html");
      let status =
        until c "the next answer" (function
          | Headers { stream = 3; fragment; _ } ->
              Some (status_of decoder fragment)
          | _ -> None)
      in
      Alcotest.(check int) "then 200" 200 status)

(* SIGTERM with two streams in flight: GOAWAY NO_ERROR naming the last of
   them, both answered in full, a stream opened after the GOAWAY left
   unanswered (the client may retry it elsewhere: RFC 9113 §6.8), then the
   connection closed. *)
let test_drain () =
  serving_process [] (fun ~pid ~port ~tls_port:_ ->
      let c = open_h2 port in
      let encoder = Hpack.Encoder.create () in
      send c
        (let first = headers ~encoder 1 "GET" "/sleep/1000" in
         first ^ headers ~encoder 3 "GET" "/sleep/1000");
      (* Both streams started: their fibers sleep. *)
      Unix.sleepf 0.3;
      Unix.kill pid Sys.sigterm;
      let last =
        until c "the GOAWAY" (function
          | Goaway { last_stream; code = why; _ } ->
              Alcotest.(check code) "GOAWAY code" No_error why;
              Some last_stream
          | _ -> None)
      in
      Alcotest.(check int) "the last stream served" 3 last;
      send c (headers ~encoder 5 "GET" "/index.html");
      let decoder = Hpack.Decoder.create () in
      let rec answers statuses ended =
        match next_frame c with
        | None -> (statuses, ended)
        | Some (Headers { stream; fragment; _ }) ->
            if stream > last then
              Alcotest.failf "stream %d, opened after the GOAWAY, answered"
                stream;
            answers ((stream, status_of decoder fragment) :: statuses) ended
        | Some (Data { stream; end_stream = true; _ }) ->
            answers statuses (stream :: ended)
        | Some _ -> answers statuses ended
      in
      let statuses, ended = answers [] [] in
      Alcotest.(check (list (pair int int)))
        "both in-flight streams answered"
        [ (1, 200); (3, 200) ]
        (List.sort compare statuses);
      Alcotest.(check (list int))
        "and finished" [ 1; 3 ] (List.sort compare ended))

let test_too_many_streams () =
  serving [ "--http2-max-streams"; "2" ] (fun ~port ~tls_port:_ ->
      let c = open_h2 port in
      let encoder = Hpack.Encoder.create () in
      send c
        (* In order: the blocks share the encoder's table. *)
        (let first = headers ~encoder 1 "GET" "/sleep/2000" in
         let second = headers ~encoder 3 "GET" "/sleep/2000" in
         first ^ second ^ headers ~encoder 5 "GET" "/sleep/2000");
      let refused =
        until c "a refusal" (function
          | Rst_stream { stream = 5; code } -> Some code
          | Headers { stream = 5; _ } ->
              Alcotest.fail "the third stream was served"
          | _ -> None)
      in
      Alcotest.(check code) "REFUSED_STREAM" Refused_stream refused)

let () =
  Alcotest.run "h2"
    [
      ( "conformance",
        [
          Alcotest.test_case "h2spec over h2c" `Quick (h2spec_over ~tls:false);
          Alcotest.test_case "h2spec over TLS" `Quick (h2spec_over ~tls:true);
        ] );
      ( "clients",
        [
          Alcotest.test_case "curl" `Quick test_curl;
          Alcotest.test_case "--http2 off" `Quick test_off;
          Alcotest.test_case "protocol in logs and metrics" `Quick
            test_protocol_named;
        ] );
      ("drain", [ Alcotest.test_case "streams in flight" `Quick test_drain ]);
      ( "abuse",
        [
          Alcotest.test_case "rapid reset" `Quick test_rapid_reset;
          Alcotest.test_case "CONTINUATION flood" `Quick test_continuation_flood;
          Alcotest.test_case "field block too large" `Quick test_block_too_large;
          Alcotest.test_case "field block too slow" `Quick test_slow_block;
          Alcotest.test_case "HPACK bomb" `Quick test_hpack_bomb;
          Alcotest.test_case "PING flood" `Quick
            (flood "PING" (Ping { ack = false; data = "12345678" }));
          Alcotest.test_case "SETTINGS flood" `Quick
            (flood "SETTINGS" (Settings []));
          Alcotest.test_case "WINDOW_UPDATE flood" `Quick
            (flood "WINDOW_UPDATE"
               (Window_update { stream = 0; increment = 1 }));
          Alcotest.test_case "zero window" `Quick test_zero_window;
          Alcotest.test_case "streams past the limit" `Quick
            test_too_many_streams;
        ] );
    ]
