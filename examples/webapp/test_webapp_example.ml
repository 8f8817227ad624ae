(* The to-do application in memory: a browser-like client (cookie jar, CSRF
   tokens) through the whole server, on a real SQLite file. *)

open Braid_server
module Client = Testing.Client
module Ws = Testing.Websocket_client

let check_int = Alcotest.(check int)
let check_bool = Alcotest.(check bool)

let contains s sub =
  let n = String.length s and m = String.length sub in
  let rec at i = i + m <= n && (String.sub s i m = sub || at (i + 1)) in
  at 0

(* A fresh database and attachment directory per test, in a loop. *)
let with_app f =
  let dir = Filename.temp_dir "todo" "" in
  let files = Filename.concat dir "files" in
  Sys.mkdir files 0o700;
  let database = Braid_sqlite.config (Filename.concat dir "todo.db") in
  Fun.protect
    ~finally:(fun () ->
      Braid_sqlite.shutdown database;
      ignore (Sys.command ("rm -rf " ^ Filename.quote dir)))
    (fun () ->
      Braid_io.run @@ fun () ->
      Braid_io.Switch.run @@ fun sw ->
      let db = Braid_sqlite.pool ~sw database in
      match Webapp.App.create_tables db with
      | Ok () ->
          let router = Webapp.App.router (Webapp.App.create ~files db) in
          let memory = Braid_web.In_memory.create () in
          f (fun () -> Client.create ~memory ~files:`Disk router)
      | Error e -> Alcotest.fail (Braid_db.Error.to_string e))

let sign_up client name =
  ignore (Client.get client "/signup");
  Client.follow client
    (Client.post_form client "/signup"
       [ ("username", name); ("password", "correct horse") ])

let accounts () =
  with_app @@ fun browser ->
  let ada = browser () in
  let r = Client.get ada "/" in
  check_int "logged out: redirected" 303 r.status;
  Alcotest.(check (option string))
    "to the log-in page" (Some "/login")
    (Testing.header r "location");
  let home = sign_up ada "ada" in
  check_bool "signed up and in" true
    (contains home.body "ada&#39;s to-do list"
    || contains home.body "ada's to-do list");
  let again = sign_up (browser ()) "ada" in
  check_bool "a taken name is said so" true (contains again.body "taken");
  let intruder = browser () in
  ignore (Client.get intruder "/login");
  let r =
    Client.follow intruder
      (Client.post_form intruder "/login"
         [ ("username", "ada"); ("password", "guess") ])
  in
  check_bool "a wrong password is refused" true
    (contains r.body "Wrong user name or password");
  ignore (Client.post_form ada "/logout" []);
  check_int "logged out" 303 (Client.get ada "/").status;
  ignore (Client.get ada "/login");
  let r =
    Client.follow ada
      (Client.post_form ada "/login"
         [ ("username", "ada"); ("password", "correct horse") ])
  in
  check_bool "logged in again" true (contains r.body "<ul id=\"items\">")

let items_and_csrf () =
  with_app @@ fun browser ->
  let ada = browser () in
  ignore (sign_up ada "ada");
  let r = Client.post_form ada "/items" [ ("title", "<b>milk</b>") ] in
  check_int "added" 303 r.status;
  let home = Client.get ada "/" in
  check_bool "listed, escaped" true
    (contains home.body "&lt;b&gt;milk&lt;/b&gt;");
  let forged =
    Client.post_form ada "/items"
      [ ("title", "forged"); ("csrf_token", "not-a-token") ]
  in
  check_int "a forged form: 403" 403 forged.status;
  check_bool "and nothing added" false
    (contains (Client.get ada "/").body "forged");
  let other = browser () in
  ignore (sign_up other "grace");
  check_bool "another user's list is theirs" false
    (contains (Client.get other "/").body "milk")

let api () =
  with_app @@ fun browser ->
  let ada = browser () in
  ignore (sign_up ada "ada");
  let token = Option.get (Client.csrf_token ada) in
  let json = "application/json" in
  let refused =
    Client.post ada ~content_type:json ~body:{|{"title":"x"}|} "/api/items"
  in
  check_int "no X-CSRF-Token: 403" 403 refused.status;
  let created =
    Client.post ada ~content_type:json
      ~headers:[ ("X-CSRF-Token", token) ]
      ~body:{|{"title":"eggs"}|} "/api/items"
  in
  check_int "created" 201 created.status;
  let list = Client.get ada "/api/items" in
  Alcotest.(check string)
    "listed" {|[{"id":1,"title":"eggs","attachment":false}]|} list.body

let multipart ~token ~file =
  let boundary = "XyZ" in
  let part name ?filename value =
    Printf.sprintf
      "--%s\r\nContent-Disposition: form-data; name=\"%s\"%s\r\n\r\n%s\r\n"
      boundary name
      (match filename with Some f -> "; filename=\"" ^ f ^ "\"" | None -> "")
      value
  in
  ( "multipart/form-data; boundary=" ^ boundary,
    (match token with Some t -> part "csrf_token" t | None -> "")
    ^ part "file" ~filename:"note.txt" file
    ^ "--" ^ boundary ^ "--\r\n" )

let attachments () =
  with_app @@ fun browser ->
  let ada = browser () in
  ignore (sign_up ada "ada");
  ignore (Client.post_form ada "/items" [ ("title", "report") ]);
  ignore (Client.get ada "/");
  let token = Client.csrf_token ada in
  let content_type, body = multipart ~token:None ~file:"forged" in
  check_int "no token: 403" 403
    (Client.post ada ~content_type ~body "/items/1/attachment").status;
  check_int "nothing stored" 404 (Client.get ada "/items/1/attachment").status;
  let content_type, body = multipart ~token ~file:"the report" in
  check_int "uploaded" 303
    (Client.post ada ~content_type ~body "/items/1/attachment").status;
  let r = Client.get ada "/items/1/attachment" in
  check_int "downloaded" 200 r.status;
  Alcotest.(check string) "its content" "the report" r.body;
  let other = browser () in
  ignore (sign_up other "grace");
  check_int "not another user's" 404
    (Client.get other "/items/1/attachment").status

let live_updates () =
  with_app @@ fun browser ->
  let tab1 = browser () in
  ignore (sign_up tab1 "ada");
  let tab2 = browser () in
  List.iter (fun (n, v) -> Client.set_cookie tab2 n v) (Client.cookies tab1);
  let received =
    Ws.connect tab2 "/updates" (fun ws ->
        ignore (Client.post_form tab1 "/items" [ ("title", "bread") ]);
        Ws.receive ws)
  in
  match received with
  | Ok (`Text html) ->
      check_bool "the new item, as HTML" true (contains html ">bread</span>");
      check_bool "without the adding session's CSRF token" false
        (contains html "csrf_token")
  | Ok _ -> Alcotest.fail "not a text message"
  | Error r -> Alcotest.failf "handshake refused: %d" r.status

let error_page () =
  with_app @@ fun browser ->
  let r = Client.get (browser ()) "/nowhere" in
  check_int "404" 404 r.status;
  check_bool "the application's page" true (contains r.body "Error 404")

let () =
  Alcotest.run "todo"
    [
      ( "todo",
        [
          Alcotest.test_case "accounts" `Quick accounts;
          Alcotest.test_case "items and CSRF" `Quick items_and_csrf;
          Alcotest.test_case "JSON API" `Quick api;
          Alcotest.test_case "attachments" `Quick attachments;
          Alcotest.test_case "live updates" `Quick live_updates;
          Alcotest.test_case "error page" `Quick error_page;
        ] );
    ]
