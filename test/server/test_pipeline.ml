(* The whole request pipeline without sockets: bytes in through a read
   function, bytes out through a write function, every service answered by
   the in-memory handlers. *)

open Braid_http
open Braid_server
open Braid_web
open Text_and_process
module Pipeline = Braid_server.Private.Pipeline
module Head_cache = Braid_web.Private.Head_cache

let now = 1_000_000_000. (* Sun, 09 Sep 2001 01:46:40 GMT *)
let date = "Sun, 09 Sep 2001 01:46:40 GMT"

(* [?to=VALUE], percent-decoded: user input a handler might trust. *)
let redirect_target (r : Handler.request) =
  match r.query with
  | Some q when String.starts_with ~prefix:"to=" q -> (
      match Url_path.percent_decode (String.sub q 3 (String.length q - 3)) with
      | Ok target -> target
      | Error _ -> "/")
  | _ -> "/"

let same_fields = [ ("X-Kind", "same") ]

let routes =
  Router.empty
  |> Router.add GET "/hello" (fun _ -> Response.string "hello")
  |> Router.add GET "/go" (fun r -> Response.redirect (redirect_target r))
  |> Router.add GET "/status/:n" (fun r ->
         Response.empty (int_of_string (Option.get (Handler.param r "n"))))
  |> Router.add GET "/bad-name" (fun _ ->
         Response.string ~headers:[ ("Bad Name:", "v") ] "x")
  |> Router.add GET "/echo/:x" (fun r ->
         Response.string (Option.get (Handler.param r "x")))
  |> Router.add POST "/reverse" Braid_cli.Demo.reverse
  |> Router.add ~max_body:10 POST "/small" (fun r ->
         match Handler.body_string r with
         | Ok b -> Response.string (string_of_int (String.length b))
         | Error e -> Response.error e.status e.reason)
  |> Router.add POST "/ignore" (fun _ -> Response.string "ignored")
  |> Router.add GET "/boom" (fun _ -> failwith "boom")
  |> Router.add POST "/boom" (fun _ -> failwith "boom")
  |> Router.add GET "/stream" (fun _ ->
         Response.stream (fun w ->
             Response.Writer.write w "a";
             Response.Writer.write w "bc";
             Response.Writer.flush w;
             Response.Writer.write w "def"))
  |> Router.add GET "/stream-boom" (fun _ ->
         Response.stream (fun w ->
             Response.Writer.write w "partial";
             failwith "stream boom"))
  |> Router.add GET "/large" (fun _ ->
         Response.string (String.make 200_000 'x'))
  |> Router.add GET "/close" (fun _ ->
         Response.string ~headers:[ ("Connection", "close") ] "bye")
  |> Router.add GET "/up" (fun _ ->
         Response.upgrade
           ~headers:[ ("Connection", "keep-alive") ]
           ~protocol:"echo"
           (fun up ->
             (* Echoes upper-cased until the end of the stream. *)
             let buf = Bytes.create 2 in
             let rec loop () =
               match Upgraded.read up buf 0 2 with
               | 0 -> Upgraded.write up "<eof>"
               | n ->
                   Upgraded.write up
                     (String.uppercase_ascii (Bytes.sub_string buf 0 n));
                   loop ()
             in
             loop ()))
  |> Router.add GET "/up-boom" (fun _ ->
         Response.upgrade ~protocol:"echo" (fun up ->
             Upgraded.write up "x";
             failwith "upgrade boom"))
  |> Router.add GET "/same/:n" (fun r ->
         (* One list for every answer: the pipeline keeps its text. *)
         let n = int_of_string (Option.get (Handler.param r "n")) in
         Response.make ~headers:same_fields 200 (String (String.make n 'x')))
  |> Router.add GET "/log" (fun r ->
         ignore r;
         Log.info "from a handler";
         Response.string "logged")

let memory () =
  let mem = In_memory.create ~now ~router:routes () in
  In_memory.add_file mem ~mtime:(now -. 3600.) "/srv/www/index.html"
    "<p>home</p>";
  In_memory.add_file mem ~mtime:(now -. 3600.) "/srv/www/a.txt" "0123456789";
  In_memory.add_directory mem "/srv/www/docs";
  In_memory.add_file mem "/srv/www/docs/index.html" "docs";
  mem

let config = { Config.default with root = Some "/srv/www" }

(* The in-memory clock stands still unless told: the responses' dates do not
   depend on how fast the test runs. *)
let dates () = Head_cache.create ()

type step = Send of string | Expect_sent of string

type run = {
  outcome : Pipeline.outcome;
  output : string;
  writes : int list;  (** The length of each write, first first. *)
  mem : In_memory.t;
}

(* Feeds [steps] one read at a time; [Expect_sent s] checks, when the server
   asks for more input, that it has already written [s]. *)

(* The pipeline over an in-memory byte stream, as a socket connection runs
   it but with no peer, no wait for input and no sendfile. *)
let serve_stream config services ~read ~write =
  Pipeline.serve
    (Pipeline.create
       (Pipeline.standalone config (dates ()))
       {
         peer = None;
         read;
         write;
         await_input = None;
         file_sender = None;
         alpn = (fun () -> None);
       }
       services)

let drive ?(config = config) ?(mem = memory ()) ?(direct = false) steps =
  let out = Buffer.create 1024 and writes = ref [] in
  let steps = ref steps in
  let rec read buf off len =
    match !steps with
    | [] -> 0
    | Expect_sent s :: rest ->
        if not (contains (Buffer.contents out) s) then
          Alcotest.failf "the server waits for input before sending %S; sent %S"
            s (Buffer.contents out);
        steps := rest;
        read buf off len
    | Send s :: rest ->
        let n = min len (String.length s) in
        Bytes.blit_string s 0 buf off n;
        steps :=
          if n < String.length s then
            Send (String.sub s n (String.length s - n)) :: rest
          else rest;
        n
  in
  let write buf off len =
    writes := len :: !writes;
    Buffer.add_subbytes out buf off len
  in
  let outcome =
    In_memory.run mem (fun () ->
        (* [direct]: the pipeline is given the in-memory services without
           looking them up, as the benchmarks' baseline is given the
           production ones. *)
        let services =
          if direct then In_memory.services mem else Services.current ()
        in
        serve_stream config services ~read ~write)
  in
  { outcome; output = Buffer.contents out; writes = List.rev !writes; mem }

let run ?config ?mem ?heads input =
  let r = drive ?config ?mem [ Send input ] in
  let responses, rest = Wire.parse ?heads r.output in
  if rest <> "" then Alcotest.failf "incomplete response: %S" rest;
  (r, responses)

let outcome =
  Alcotest.testable
    (fun ppf -> function
      | Pipeline.Peer_closed -> Format.fprintf ppf "Peer_closed"
      | Server_closed -> Format.fprintf ppf "Server_closed"
      | Parked -> Format.fprintf ppf "Parked")
    ( = )

let check_statuses name expected responses =
  Alcotest.(check (list int))
    name expected
    (List.map (fun (r : Wire.response) -> r.status) responses)

let check_header name r field expected =
  Alcotest.(check (option string)) name expected (Wire.header r field)

let get ?(version = "1.1") ?(headers = []) path =
  Printf.sprintf "GET %s HTTP/%s\r\nHost: t\r\n%s\r\n" path version
    (String.concat "" (List.map (fun (n, v) -> n ^ ": " ^ v ^ "\r\n") headers))

(* {1 Connections} *)

let upgrade_headers = [ ("Connection", "Upgrade"); ("Upgrade", "echo") ]

let upgrade () =
  (* The bytes after the head, read with it, come first. *)
  let r =
    drive
      [
        Send (get ~headers:upgrade_headers "/up" ^ "abc");
        Expect_sent "ABC";
        Send "def";
      ]
  in
  let head, rest =
    match find r.output "\r\n\r\n" with
    | Some i ->
        ( String.sub r.output 0 i,
          String.sub r.output (i + 4) (String.length r.output - i - 4) )
    | None -> Alcotest.failf "no head in %S" r.output
  in
  Alcotest.(check bool)
    "101" true
    (String.starts_with ~prefix:"HTTP/1.1 101 Switching Protocols\r\n" head);
  Alcotest.(check bool)
    "Connection: Upgrade, the handler's field dropped" true
    (contains head "Connection: Upgrade" && not (contains head "keep-alive"));
  Alcotest.(check bool) "Upgrade: echo" true (contains head "Upgrade: echo");
  Alcotest.(check bool) "no length" false (contains head "Content-Length");
  Alcotest.(check string) "the new protocol" "ABCDEF<eof>" rest;
  Alcotest.check outcome "closed after" Server_closed r.outcome

let upgrade_refused () =
  (* Not asked for: the handler's mistake, a 500; the connection goes on. *)
  let r, rs = run (get "/up" ^ get "/hello") in
  check_statuses "500 then 200" [ 500; 200 ] rs;
  Alcotest.(check bool)
    "logged" true
    (List.exists
       (function Log_event.Handler_failed _ -> true | _ -> false)
       (In_memory.events r.mem));
  let _, rs =
    run (get ~version:"1.0" ~headers:upgrade_headers "/up" ^ get "/hello")
  in
  check_statuses "HTTP/1.0 cannot upgrade" [ 500 ] rs;
  let _, rs =
    run
      (get ~headers:[ ("Connection", "Upgrade"); ("Upgrade", "h2c") ] "/up"
      ^ get "/hello")
  in
  check_statuses "another protocol" [ 500; 200 ] rs;
  (* A failing callback is logged; the connection closes. *)
  let r = drive [ Send (get ~headers:upgrade_headers "/up-boom") ] in
  Alcotest.(check bool)
    "101 sent, then the callback's byte" true
    (contains r.output "101 Switching" && String.ends_with ~suffix:"x" r.output);
  Alcotest.(check bool)
    "the failure logged" true
    (List.exists
       (function
         | Log_event.Handler_failed { exn = Failure _; _ } -> true | _ -> false)
       (In_memory.events r.mem));
  Alcotest.check outcome "closed" Server_closed r.outcome;
  (* 101 and an upgrade go together. *)
  let refused f =
    match f () with
    | (_ : Response.t) -> false
    | exception Invalid_argument _ -> true
  in
  Alcotest.(check bool)
    "101 without an upgrade" true
    (refused (fun () -> Response.empty 101));
  Alcotest.(check bool)
    "an upgrade with another status" true
    (refused (fun () ->
         Response.make 200 (Upgrade { protocol = "x"; run = ignore })));
  Alcotest.(check bool)
    "a bad protocol" true
    (refused (fun () -> Response.upgrade ~protocol:"a b" ignore))

let keep_alive () =
  let r, rs = run (get "/hello" ^ get "/echo/x%20y") in
  check_statuses "both answered" [ 200; 200 ] rs;
  Alcotest.(check (list string))
    "bodies" [ "hello"; "x y" ]
    (List.map (fun (r : Wire.response) -> r.body) rs);
  List.iter
    (fun r ->
      check_header "no Connection field in 1.1 keep-alive" r "connection" None;
      check_header "date" r "date" (Some date);
      check_header "length" r "content-length"
        (Some (string_of_int (String.length r.body))))
    rs;
  Alcotest.check outcome "the peer ended it" Peer_closed r.outcome;
  (* A response does not wait for the next request. *)
  let r =
    drive [ Send (get "/hello"); Expect_sent "hello"; Send (get "/hello") ]
  in
  Alcotest.(check int) "one write per response" 2 (List.length r.writes)

let pipelining () =
  let r, rs = run (get "/echo/1" ^ get "/echo/2" ^ get "/echo/3") in
  Alcotest.(check (list string))
    "in order" [ "1"; "2"; "3" ]
    (List.map (fun (r : Wire.response) -> r.body) rs);
  Alcotest.(check int) "three responses in one write" 1 (List.length r.writes)

let pipelining_bounded () =
  let config = { config with output_buffer = 256 } in
  let r =
    drive ~config
      [ Send (String.concat "" (List.init 100 (fun _ -> get "/a.txt"))) ]
  in
  let rs, _ = Wire.parse r.output in
  Alcotest.(check int) "all answered" 100 (List.length rs);
  Alcotest.(check bool)
    "the buffer is flushed when full, not grown for every pipelined response"
    true
    (List.length r.writes > 10)

let http_1_0 () =
  let r, rs = run (get ~version:"1.0" "/hello" ^ get "/hello") in
  check_statuses "one answer" [ 200 ] rs;
  check_header "close announced" (List.hd rs) "connection" (Some "close");
  Alcotest.check outcome "server closed" Server_closed r.outcome;
  let r, rs =
    run
      (get ~version:"1.0" ~headers:[ ("Connection", "keep-alive") ] "/hello"
      ^ get ~version:"1.0" "/hello")
  in
  check_statuses "keep-alive then close" [ 200; 200 ] rs;
  check_header "keep-alive announced" (List.nth rs 0) "connection"
    (Some "keep-alive");
  check_header "then close" (List.nth rs 1) "connection" (Some "close");
  Alcotest.check outcome "server closed" Server_closed r.outcome

let connection_close () =
  let r, rs =
    run (get ~headers:[ ("Connection", "close") ] "/hello" ^ get "/hello")
  in
  check_statuses "one answer" [ 200 ] rs;
  check_header "close" (List.hd rs) "connection" (Some "close");
  Alcotest.check outcome "server closed" Server_closed r.outcome;
  let _, rs = run (get "/close" ^ get "/hello") in
  check_statuses "a handler asking to close" [ 200 ] rs;
  check_header "one Connection field" (List.hd rs) "connection" (Some "close");
  Alcotest.(check int)
    "only one" 1
    (Wire.header_count (List.hd rs) "connection")

let head () =
  let _, rs =
    run ~heads:[ 0; 1; 2 ]
      ("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"
     ^ "HEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"
     ^ "HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n" ^ get "/hello")
  in
  check_statuses "all answered" [ 200; 200; 200; 200 ] rs;
  check_header "GET's length" (List.nth rs 0) "content-length" (Some "5");
  check_header "file length" (List.nth rs 1) "content-length" (Some "10");
  check_header "stream framing" (List.nth rs 2) "transfer-encoding"
    (Some "chunked");
  Alcotest.(check string) "then GET has its body" "hello" (List.nth rs 3).body

let expect_continue () =
  let body = "abcdef" in
  let r =
    drive
      [
        Send
          (Printf.sprintf
             "POST /reverse HTTP/1.1\r\n\
              Host: t\r\n\
              Expect: 100-continue\r\n\
              Content-Length: %d\r\n\
              \r\n"
             (String.length body));
        Expect_sent "HTTP/1.1 100 Continue\r\n\r\n";
        Send body;
        Send (get "/hello");
      ]
  in
  let rs, _ = Wire.parse r.output in
  check_statuses "100 then the answers" [ 100; 200; 200 ] rs;
  Alcotest.(check string) "reversed" "fedcba" (List.nth rs 1).body

(* RFC 9110 §10.1.1: the origin server MUST NOT wait for the content before
   sending 100 (Continue), however the expectation is listed. *)
let expect_continue_in_a_list () =
  let r =
    drive
      [
        Send
          "POST /reverse HTTP/1.1\r\n\
           Host: t\r\n\
           Expect: , 100-continue,\r\n\
           Content-Length: 3\r\n\
           \r\n";
        Expect_sent "HTTP/1.1 100 Continue\r\n\r\n";
        Send "abc";
      ]
  in
  let rs, _ = Wire.parse r.output in
  check_statuses "100 then the answer" [ 100; 200 ] rs;
  Alcotest.(check string) "reversed" "cba" (List.nth rs 1).body

let expect_continue_refused () =
  let r =
    drive
      [
        Send
          "POST /ignore HTTP/1.1\r\n\
           Host: t\r\n\
           Expect: 100-continue\r\n\
           Content-Length: 1000\r\n\
           \r\n";
      ]
  in
  let rs, _ = Wire.parse r.output in
  check_statuses "no 100 Continue, just the answer" [ 200 ] rs;
  check_header "the body was never invited: close" (List.hd rs) "connection"
    (Some "close");
  Alcotest.check outcome "server closed" Server_closed r.outcome

let chunked_upload () =
  let _, rs =
    run
      ("POST /reverse HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
     ^ "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n" ^ get "/hello")
  in
  check_statuses "both" [ 200; 200 ] rs;
  Alcotest.(check string) "reversed" "gfedcba" (List.hd rs).body

let unread_body_drained () =
  let _, rs =
    run
      ("POST /ignore HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nGET /x"
     ^ get "/hello")
  in
  check_statuses "the body is skipped, not parsed" [ 200; 200 ] rs;
  Alcotest.(check string) "second" "hello" (List.nth rs 1).body

let streams () =
  let _, rs = run (get "/stream" ^ get "/hello") in
  check_statuses "both" [ 200; 200 ] rs;
  Alcotest.(check bool) "chunked" true (List.hd rs).chunked;
  Alcotest.(check string) "content" "abcdef" (List.hd rs).body;
  let r, rs = run (get ~version:"1.0" "/stream") in
  check_statuses "HTTP/1.0" [ 200 ] rs;
  Alcotest.(check bool) "not chunked" false (List.hd rs).chunked;
  check_header "no length" (List.hd rs) "content-length" None;
  check_header "close-delimited" (List.hd rs) "connection" (Some "close");
  Alcotest.(check string) "content" "abcdef" (List.hd rs).body;
  Alcotest.check outcome "closed" Server_closed r.outcome

(* {1 Bad input} *)

let rejected ?(then_serves = true) name status input =
  let r, rs = run (input ^ get "/hello") in
  match rs with
  | first :: rest ->
      Alcotest.(check int) (name ^ ": status") status first.status;
      if then_serves then (
        check_statuses (name ^ ": then serves") [ 200 ] rest;
        Alcotest.check outcome
          (name ^ ": connection kept")
          Peer_closed r.outcome)
      else (
        check_header
          (name ^ ": close announced")
          first "connection" (Some "close");
        check_statuses (name ^ ": nothing more") [] rest;
        Alcotest.check outcome (name ^ ": closed") Server_closed r.outcome)
  | [] -> Alcotest.failf "%s: no response" name

let bad_input () =
  let closes = rejected ~then_serves:false in
  closes "malformed request line" 400 "GET  /a HTTP/1.1\r\nHost: t\r\n\r\n";
  closes "garbage" 400 "\x16\x03\x01\x02\x00\r\n\r\n";
  closes "whitespace before colon" 400 "GET / HTTP/1.1\r\nHost : t\r\n\r\n";
  closes "obs-fold" 400 "GET / HTTP/1.1\r\nHost: t\r\nX: a\r\n b\r\n\r\n";
  closes "bare CR" 400 "GET / HTTP/1.1\r\nHost: t\rX: y\r\n\r\n";
  closes "NUL" 400 "GET / HTTP/1.1\r\nHost: t\r\nX: a\000b\r\n\r\n";
  rejected "missing Host" 400 "GET /hello HTTP/1.1\r\n\r\n";
  rejected "several Host fields" 400
    "GET /hello HTTP/1.1\r\nHost: t\r\nHost: t\r\n\r\n";
  rejected "invalid Host" 400 "GET /hello HTTP/1.1\r\nHost: user@t\r\n\r\n";
  closes "invalid Host with a body" 400
    "POST /reverse HTTP/1.1\r\nHost: t/x\r\nContent-Length: 3\r\n\r\nabc";
  closes "Content-Length and Transfer-Encoding" 400
    "POST /reverse HTTP/1.1\r\n\
     Host: t\r\n\
     Content-Length: 3\r\n\
     Transfer-Encoding: chunked\r\n\
     \r\n\
     0\r\n\
     \r\n";
  closes "two Content-Lengths" 400
    "POST /reverse HTTP/1.1\r\n\
     Host: t\r\n\
     Content-Length: 3\r\n\
     Content-Length: 4\r\n\
     \r\n\
     abcd";
  closes "chunked not the final transfer coding" 400
    "POST /reverse HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n";
  closes "unsupported transfer coding before chunked" 501
    "POST /reverse HTTP/1.1\r\n\
     Host: t\r\n\
     Transfer-Encoding: gzip, chunked\r\n\
     \r\n\
     0\r\n\
     \r\n";
  closes "Transfer-Encoding in HTTP/1.0" 400
    "POST /reverse HTTP/1.0\r\n\
     Transfer-Encoding: chunked\r\n\
     Content-Length: 5\r\n\
     \r\n\
     0\r\n\
     \r\n";
  closes "HTTP/2.0" 505 "GET / HTTP/2.0\r\nHost: t\r\n\r\n";
  closes "HTTP/3.1" 505 "GET / HTTP/3.1\r\nHost: t\r\n\r\n";
  closes "request line over 8 KiB" 414
    ("GET /" ^ String.make 9000 'a' ^ " HTTP/1.1\r\nHost: t\r\n\r\n");
  closes "header section over 64 KiB" 431
    ("GET / HTTP/1.1\r\nHost: t\r\n"
    ^ String.concat ""
        (List.init 40 (fun i ->
             Printf.sprintf "X-%d: %s\r\n" i (String.make 2000 'v')))
    ^ "\r\n");
  closes "over 100 fields" 431
    ("GET / HTTP/1.1\r\nHost: t\r\n"
    ^ String.concat "" (List.init 101 (fun i -> Printf.sprintf "X-%d: v\r\n" i))
    ^ "\r\n");
  closes "Content-Length over the limit" 413
    "POST /reverse HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n";
  rejected "unknown method" 501 "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n"

(* RFC 9112 §3.2.2: "a server MUST accept the absolute-form in requests";
   the target URI is then the request-target (§3.3), whatever Host says. *)
let absolute_form_accepted () =
  let _, rs =
    run
      ("GET http://elsewhere.example/hello HTTP/1.1\r\nHost: t\r\n\r\n"
     ^ "GET http://t/echo/x?q HTTP/1.1\r\nHost: t\r\n\r\n"
     ^ "GET http://t HTTP/1.1\r\nHost: t\r\n\r\n")
  in
  check_statuses "served" [ 200; 200; 200 ] rs;
  Alcotest.(check (list string))
    "routed by the target's path"
    [ "hello"; "x"; "<p>home</p>" ]
    (List.map (fun (r : Wire.response) -> r.body) rs)

(* RFC 9112 §6.3: "If this is a request message and none of the above are
   true, then the message body length is zero": what follows the head is the
   next request, whatever the method. *)
let no_length_means_no_body () =
  let _, rs =
    run
      ("POST /ignore HTTP/1.1\r\nHost: t\r\n\r\n" ^ get "/hello"
     ^ "PUT /hello HTTP/1.1\r\nHost: t\r\n\r\n" ^ get "/hello")
  in
  check_statuses "four answers" [ 200; 200; 405; 200 ] rs

let limits_configurable () =
  let config =
    {
      config with
      limits = { Limits.default with max_request_line = 25; max_body = 4 };
    }
  in
  let _, rs =
    run ~config ("GET /" ^ String.make 30 'a' ^ " HTTP/1.1\r\n\r\n")
  in
  check_statuses "short request line" [ 414 ] rs;
  let _, rs =
    run ~config
      "POST /reverse HTTP/1.1\r\n\
       Host: t\r\n\
       Transfer-Encoding: chunked\r\n\
       \r\n\
       3\r\n\
       abc\r\n\
       3\r\n\
       def\r\n\
       0\r\n\
       \r\n"
  in
  check_statuses "chunked body over the limit" [ 413 ] rs;
  check_header "closes" (List.hd rs) "connection" (Some "close");
  let _, rs =
    run
      "POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello world"
  in
  check_statuses "a route's own limit" [ 413 ] rs;
  let _, rs =
    run
      ("POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n0123456789"
     ^ get "/hello")
  in
  check_statuses "within the route's limit" [ 200; 200 ] rs;
  Alcotest.(check string) "length" "10" (List.hd rs).body

let bad_chunk () =
  let r, rs =
    run
      ("POST /reverse HTTP/1.1\r\n\
        Host: t\r\n\
        Transfer-Encoding: chunked\r\n\
        \r\n\
        zz\r\n" ^ get "/hello")
  in
  check_statuses "400 whatever the handler said" [ 400 ] rs;
  check_header "close" (List.hd rs) "connection" (Some "close");
  Alcotest.check outcome "closed" Server_closed r.outcome;
  let _, rs =
    run
      "POST /ignore HTTP/1.1\r\n\
       Host: t\r\n\
       Transfer-Encoding: chunked\r\n\
       \r\n\
       3\r\n\
       abcX\r\n"
  in
  check_statuses "found while draining" [ 400 ] rs

let truncated () =
  let r, rs = run "GET /hello HTTP/1.1\r\nHost:" in
  check_statuses "truncated head" [ 400 ] rs;
  Alcotest.check outcome "closed" Server_closed r.outcome;
  let r, rs = run "" in
  check_statuses "nothing" [] rs;
  Alcotest.(check string) "silence" "" r.output;
  Alcotest.check outcome "peer closed" Peer_closed r.outcome

(* {1 Routing and handlers} *)

let routing () =
  let _, rs =
    run
      (get "/nope" ^ "DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"
     ^ "POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
     ^ get "/echo/%41")
  in
  check_statuses "404, 405, 405, 200" [ 404; 405; 405; 200 ] rs;
  check_header "Allow" (List.nth rs 1) "allow" (Some "GET, HEAD");
  check_header "Allow on files" (List.nth rs 2) "allow" (Some "GET, HEAD");
  Alcotest.(check string) "decoded parameter" "A" (List.nth rs 3).body;
  let _, rs = run ~config:{ config with root = None } (get "/a.txt") in
  check_statuses "no root, no files" [ 404 ] rs

let handler_exception () =
  let r, rs =
    run
      (get "/boom"
     ^ "POST /boom HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\nGET /x H\n"
     ^ get "/hello")
  in
  check_statuses "500, 500, then served" [ 500; 500; 200 ] rs;
  Alcotest.check outcome "connection kept" Peer_closed r.outcome;
  let failures =
    List.filter
      (function Log.Handler_failed _ -> true | _ -> false)
      (In_memory.events r.mem)
  in
  Alcotest.(check int) "both logged" 2 (List.length failures);
  let r = drive [ Send (get "/stream-boom" ^ get "/hello") ] in
  Alcotest.check outcome "a stream failing after its head closes" Server_closed
    r.outcome;
  Alcotest.(check bool) "no second response" false (contains r.output "hello")

(* Response splitting: a [Location] from user input with CR LF in it. *)
let redirect_injection () =
  let r, rs =
    run
      (get "/go?to=%2Fok"
      ^ get "/go?to=%2F%0d%0aSet-Cookie:%20session=attacker"
      ^ get "/hello")
  in
  check_statuses "the redirect, a 500, then served" [ 301; 500; 200 ] rs;
  check_header "location" (List.hd rs) "location" (Some "/ok");
  Alcotest.(check bool)
    "no injected field on the wire" false
    (contains r.output "Set-Cookie");
  Alcotest.check outcome "connection kept" Peer_closed r.outcome

let invalid_responses () =
  let r, rs =
    run (get "/status/42" ^ get "/status/1000" ^ get "/bad-name" ^ get "/hello")
  in
  check_statuses "500 each, then served" [ 500; 500; 500; 200 ] rs;
  Alcotest.(check bool)
    "no bad field on the wire" false
    (contains r.output "Bad Name");
  let refusals =
    List.filter_map
      (function
        | Log.Handler_failed { exn = Invalid_argument msg; _ } -> Some msg
        | _ -> None)
      (In_memory.events r.mem)
  in
  Alcotest.(check int) "each logged" 3 (List.length refusals);
  List.iter
    (fun msg ->
      Alcotest.(check bool)
        (Printf.sprintf "refused when built (%s)" msg)
        true
        (contains msg "Braid_web.Response"))
    refusals

let access_log () =
  let r, _ = run (get "/hello" ^ get "/log" ^ "GET / HTTP/2.0\r\n\r\n") in
  let entries =
    List.filter_map
      (function Log.Access a -> Some a | _ -> None)
      (In_memory.events r.mem)
  in
  Alcotest.(check (list int))
    "one entry per response" [ 200; 200; 505 ]
    (List.map (fun (a : Log.access) -> a.status) entries);
  Alcotest.(check (list (option string)))
    "structured"
    [ Some "/hello"; Some "/log"; None ]
    (List.map
       (fun (a : Log.access) ->
         Option.map (fun (q : Request.t) -> q.target) a.request)
       entries);
  Alcotest.(check bool)
    "a handler logs through the connection's capability" true
    (List.exists
       (function
         | Log.Message { text = "from a handler"; _ } -> true | _ -> false)
       (In_memory.events r.mem))

let clock_and_dates () =
  let mem = memory () in
  In_memory.set_now mem (now +. 86400. +. 0.5);
  let _, rs = run ~mem (get "/hello") in
  check_header "the clock service dates responses" (List.hd rs) "date"
    (Some "Mon, 10 Sep 2001 01:46:40 GMT")

(* Dot-segments are resolved before routing and files; a file is not a
   directory; nothing redirects to "//". *)
let exact_paths () =
  let r, rs =
    run
      (get "/a.txt/" ^ get "/a.txt/." ^ get "/." ^ get "/%2e" ^ get "/docs/.."
     ^ get "/./hello" ^ get "/docs/./../hello" ^ get "/%68ello" ^ get "/.."
      ^ get "/docs/%2e%2e/%2e%2e/a.txt"
      ^ get "/docs/." ^ get "/docs")
  in
  check_statuses "statuses"
    [ 404; 404; 200; 200; 200; 200; 200; 200; 400; 400; 200; 301 ]
    rs;
  Alcotest.(check (list string))
    "bodies"
    [ "<p>home</p>"; "<p>home</p>"; "<p>home</p>"; "hello"; "hello"; "hello" ]
    (List.map
       (fun (r : Wire.response) -> r.body)
       (List.filteri (fun i _ -> i >= 2 && i <= 7) rs));
  check_header "a directory without its slash" (List.nth rs 11) "location"
    (Some "/docs/");
  Alcotest.(check bool)
    "no redirect to //" false
    (contains r.output "Location: //")

let static_through_pipeline () =
  let _, rs =
    run
      (get "/a.txt"
      ^ get ~headers:[ ("Range", "bytes=2-4") ] "/a.txt"
      ^ get ~headers:[ ("If-Modified-Since", date) ] "/a.txt"
      ^ get "/docs" ^ get "/docs/" ^ get "/%2e%2e/etc/passwd"
      ^ get ~headers:[ ("Range", "bytes=20-") ] "/a.txt")
  in
  check_statuses "statuses" [ 200; 206; 304; 301; 200; 400; 416 ] rs;
  Alcotest.(check string) "file" "0123456789" (List.nth rs 0).body;
  Alcotest.(check string) "range" "234" (List.nth rs 1).body;
  check_header "304 has no length" (List.nth rs 2) "content-length" None;
  check_header "redirect" (List.nth rs 3) "location" (Some "/docs/");
  Alcotest.(check string) "index" "docs" (List.nth rs 4).body;
  check_header "416" (List.nth rs 6) "content-range" (Some "bytes */10")

(* The pipeline keeps the text of a head's fields when the same list comes
   twice in a row (a crowd asking for one file): what it sends must still be
   what each response says. *)
let heads_kept_rendered () =
  let mem = memory () in
  let _, rs =
    run ~mem
      (get "/same/1" ^ get "/same/1" ^ get "/same/3" ^ get "/same/3"
      ^ get ~headers:[ ("Connection", "keep-alive") ] ~version:"1.0" "/same/2"
      ^ get "/same/4"
      ^ get ~version:"1.0" "/same/2")
  in
  check_statuses "statuses" [ 200; 200; 200; 200; 200; 200; 200 ] rs;
  Alcotest.(check (list string))
    "bodies"
    [ "x"; "x"; "xxx"; "xxx"; "xx"; "xxxx"; "xx" ]
    (List.map (fun (r : Wire.response) -> r.body) rs);
  List.iter (fun r -> check_header "field" r "x-kind" (Some "same")) rs;
  check_header "HTTP/1.0 kept alive" (List.nth rs 4) "connection"
    (Some "keep-alive");
  check_header "HTTP/1.1" (List.nth rs 5) "connection" None;
  check_header "HTTP/1.0 closes" (List.nth rs 6) "connection" (Some "close");
  (* A file served twice, then changed: its new length and tag. *)
  let _, before = run ~mem (get "/a.txt" ^ get "/a.txt") in
  In_memory.add_file mem ~mtime:(now -. 60.) "/srv/www/a.txt" "01234";
  let _, after = run ~mem (get "/a.txt" ^ get "/a.txt") in
  let tag r = Option.get (Wire.header r "etag") in
  Alcotest.(check string)
    "same tag"
    (tag (List.nth before 0))
    (tag (List.nth before 1));
  Alcotest.(check bool)
    "new tag" true
    (tag (List.nth before 1) <> tag (List.nth after 0));
  Alcotest.(check (list string))
    "new bodies" [ "01234"; "01234" ]
    (List.map (fun (r : Wire.response) -> r.body) after);
  check_header "new length" (List.nth after 1) "content-length" (Some "5")

let file_vanishing () =
  (* The file disappears between the stat and the open. *)
  let mem = memory () in
  let services = In_memory.services mem in
  let services =
    { services with open_file = (fun _ _ -> Error File.Not_found) }
  in
  let out = Buffer.create 100 in
  let input = ref (get "/a.txt") in
  let read buf off _ =
    let n = String.length !input in
    Bytes.blit_string !input 0 buf off n;
    input := "";
    n
  in
  let write b o l = Buffer.add_subbytes out b o l in
  ignore
    (Services.run services (fun () -> serve_stream config services ~read ~write));
  let rs, _ = Wire.parse (Buffer.contents out) in
  check_statuses "404, not a broken 200" [ 404 ] rs

(* A large response reaches the socket in pieces of at most 64 KiB, so the
   send timeout measures the client's progress, not the whole response. *)
let large_response_in_pieces () =
  let r = drive [ Send (get "/large") ] in
  let rs, _ = Wire.parse r.output in
  check_statuses "200" [ 200 ] rs;
  Alcotest.(check int) "whole body" 200_000 (String.length (List.hd rs).body);
  Alcotest.(check bool)
    "no piece over 64 KiB" true
    (List.for_all (fun l -> l <= 65536) r.writes)

let effects_equal_direct () =
  let input =
    get "/hello" ^ get "/a.txt" ^ get "/stream" ^ get "/nope"
    ^ "POST /reverse HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc"
    ^ get "/boom"
  in
  let a = drive [ Send input ] and b = drive ~direct:true [ Send input ] in
  Alcotest.(check string) "same bytes" a.output b.output

(* Every read returns one byte: the same answers. *)
let byte_at_a_time () =
  let input =
    get "/hello"
    ^ "POST /reverse HTTP/1.1\r\n\
       Host: t\r\n\
       Transfer-Encoding: chunked\r\n\
       \r\n\
       3\r\n\
       abc\r\n\
       0\r\n\
       \r\n" ^ get "/a.txt"
  in
  let whole = drive [ Send input ] in
  let bytes =
    drive
      (List.init (String.length input) (fun i -> Send (String.make 1 input.[i])))
  in
  Alcotest.(check string) "same bytes" whole.output bytes.output

let () =
  Test_support.Watchdog.start "test_pipeline";
  Alcotest.run "pipeline"
    [
      ( "connections",
        [
          Alcotest.test_case "keep-alive" `Quick keep_alive;
          Alcotest.test_case "pipelining" `Quick pipelining;
          Alcotest.test_case "pipelining is bounded" `Quick pipelining_bounded;
          Alcotest.test_case "HTTP/1.0" `Quick http_1_0;
          Alcotest.test_case "Connection: close" `Quick connection_close;
          Alcotest.test_case "HEAD" `Quick head;
          Alcotest.test_case "100-continue" `Quick expect_continue;
          Alcotest.test_case "100-continue in a list" `Quick
            expect_continue_in_a_list;
          Alcotest.test_case "100-continue refused" `Quick
            expect_continue_refused;
          Alcotest.test_case "chunked upload" `Quick chunked_upload;
          Alcotest.test_case "unread body drained" `Quick unread_body_drained;
          Alcotest.test_case "upgrade" `Quick upgrade;
          Alcotest.test_case "upgrade refused" `Quick upgrade_refused;
          Alcotest.test_case "streams" `Quick streams;
          Alcotest.test_case "large response in pieces" `Quick
            large_response_in_pieces;
          Alcotest.test_case "one byte per read" `Quick byte_at_a_time;
        ] );
      ( "bad input",
        [
          Alcotest.test_case "every status" `Quick bad_input;
          Alcotest.test_case "absolute-form accepted" `Quick
            absolute_form_accepted;
          Alcotest.test_case "no length means no body" `Quick
            no_length_means_no_body;
          Alcotest.test_case "limits are configurable" `Quick
            limits_configurable;
          Alcotest.test_case "bad chunk" `Quick bad_chunk;
          Alcotest.test_case "truncated" `Quick truncated;
        ] );
      ( "handlers",
        [
          Alcotest.test_case "routing" `Quick routing;
          Alcotest.test_case "exceptions" `Quick handler_exception;
          Alcotest.test_case "redirect injection" `Quick redirect_injection;
          Alcotest.test_case "invalid status or field" `Quick invalid_responses;
          Alcotest.test_case "static files" `Quick static_through_pipeline;
          Alcotest.test_case "exact paths" `Quick exact_paths;
          Alcotest.test_case "file gone before open" `Quick file_vanishing;
          Alcotest.test_case "heads kept rendered" `Quick heads_kept_rendered;
        ] );
      ( "services",
        [
          Alcotest.test_case "access log" `Quick access_log;
          Alcotest.test_case "clock" `Quick clock_and_dates;
          Alcotest.test_case "effects = direct calls" `Quick
            effects_equal_direct;
        ] );
    ]
