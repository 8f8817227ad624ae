(* The example application, called in memory (Testing.call): no socket. *)

open Braid_server
open Braid_web

let check_int = Alcotest.(check int)
let check_string = Alcotest.(check string)

let with_app f =
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let memory = In_memory.create () in
  In_memory.add_file memory "/www/index.html" "<h1>Notes</h1>";
  In_memory.add_file memory "/www/style.css" "body {}";
  let app = Webapp.App.router ~pool ~root:"/www" in
  let call ?meth ?headers ?body target =
    Testing.call ?meth ?headers ?body ~memory app target
  in
  f call

let pages () =
  with_app @@ fun call ->
  check_string "hello" "Hello, ada!\n" (call "/hello/ada").body;
  check_string "greeting" "Good day, ada!\n"
    (call "/hello/ada?greeting=Good+day").body;
  check_int "bad query" 400 (call "/hello/ada?greeting=%zz").status;
  check_string "index" "<h1>Notes</h1>" (call "/").body;
  let r = call "/style.css" in
  check_string "static" "body {}" r.body;
  Alcotest.(check (option string))
    "type" (Some "text/css")
    (Testing.header r "content-type");
  let r = call "/nowhere" in
  check_int "404" 404 r.status;
  check_string "custom page" "<h1>Not found</h1><p><a href=\"/\">Home</a></p>\n"
    r.body;
  Alcotest.(check (option string))
    "middleware on the 404" (Some "nosniff")
    (Testing.header r "x-content-type-options");
  check_int "405" 405 (call ~meth:DELETE "/me").status;
  check_string "countdown, streamed" "2\n1\n0\n" (call "/countdown?from=2").body

let session () =
  with_app @@ fun call ->
  let form = [ ("Content-Type", "application/x-www-form-urlencoded") ] in
  let r = call ~meth:POST ~headers:form ~body:"user=Ada+L%C3%B8vel" "/login" in
  check_int "303" 303 r.status;
  let cookie = Option.get (Testing.header r "set-cookie") in
  check_string "Set-Cookie"
    "user=u=Ada+L%C3%B8vel; Path=/; HttpOnly; SameSite=Lax" cookie;
  let value = List.hd (String.split_on_char ';' cookie) in
  let r = call ~headers:[ ("Cookie", value) ] "/me" in
  check_string "me" {|{"user":"Ada Løvel"}|} r.body;
  check_int "anonymous" 401 (call "/me").status;
  check_int "bad cookie" 400
    (call ~headers:[ ("Cookie", "a b=1") ] "/me").status;
  check_int "no user" 400
    (call ~meth:POST ~headers:form ~body:"user=" "/login").status

let api () =
  with_app @@ fun call ->
  let json = [ ("Content-Type", "application/json") ] in
  let post body = call ~meth:POST ~headers:json ~body "/api/notes" in
  check_int "created" 201 (post {|{"text": "milk"}|}).status;
  check_int "created" 201 (post {|{"text": "eggs"}|}).status;
  check_int "invalid JSON" 400 (post {|{"text": |}).status;
  check_int "wrong shape" 422 (post {|{"txt": "x"}|}).status;
  check_string "list" {|["milk","eggs"]|} (call "/api/notes").body;
  check_string "fib on the pool" {|{"n":20,"fib":6765}|}
    (call "/api/fib/20").body;
  check_int "fib bound" 400 (call "/api/fib/99").status

let upload () =
  with_app @@ fun call ->
  let body =
    "--b\r\n\
     Content-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n\
     \r\n" ^ String.make 100_000 'x' ^ "\r\n--b--\r\n"
  in
  let r =
    call ~meth:POST
      ~headers:[ ("Content-Type", "multipart/form-data; boundary=b") ]
      ~body "/upload"
  in
  check_string "sizes" {|{"file":100000}|} r.body;
  check_int "truncated" 400
    (call ~meth:POST
       ~headers:[ ("Content-Type", "multipart/form-data; boundary=b") ]
       ~body:(String.sub body 0 5000) "/upload")
      .status;
  (* The route's own limit, 10 MiB, above the server's 1 MiB
     (Config.default). *)
  let big =
    "--b\r\n\
     Content-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n\
     \r\n" ^ String.make 2_000_000 'x' ^ "\r\n--b--\r\n"
  in
  let r =
    call ~meth:POST
      ~headers:[ ("Content-Type", "multipart/form-data; boundary=b") ]
      ~body:big "/upload"
  in
  check_int "2 MB under the route's 10 MiB" 200 r.status;
  check_string "2 MB sizes" {|{"file":2000000}|} r.body

let () =
  Alcotest.run "webapp example"
    [
      ( "app",
        [
          Alcotest.test_case "pages, static files, 404" `Quick pages;
          Alcotest.test_case "session cookie" `Quick session;
          Alcotest.test_case "JSON API, pool" `Quick api;
          Alcotest.test_case "upload" `Quick upload;
        ] );
    ]
