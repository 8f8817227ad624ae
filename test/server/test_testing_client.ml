(* Braid_server.Testing's browser (the cookie jar, CSRF tokens, forms,
   redirects), its WebSocket client (one connection, two at once, a hub's
   broadcast across domains, refused handshakes) and Testing.call over the
   real file system. *)

open Braid_web
open Braid_server
module C = Testing.Client
module Wsc = Testing.Websocket_client

let check_status what expected (r : Testing.response) =
  Alcotest.(check int) what expected r.status

(* {1 The cookie jar} *)

let echo_cookies r =
  match Cookie.all r with
  | Ok pairs ->
      Response.string
        (String.concat "; " (List.map (fun (n, v) -> n ^ "=" ^ v) pairs))
  | Error e -> e

let cookie_app =
  Router.(
    empty
    |> post "/login" (fun _ ->
           Response.redirect ~status:303 "/me"
           |> Cookie.set ~path:"/" ~http_only:true "user" "ada")
    |> get "/me" (fun r ->
           match Cookie.get r "user" with
           | Ok (Some u) -> Response.string u
           | _ -> Response.error 401 "log in")
    |> get "/logout" (fun _ ->
           Response.string "bye" |> Cookie.delete ~path:"/" "user")
    |> get "/admin/set" (fun _ ->
           (* No Path: the default is the request's directory, /admin. *)
           Response.string "" |> Cookie.set "area" "admin")
    |> get "/admin/show" echo_cookies
    |> get "/show" echo_cookies
    |> get "/short" (fun _ ->
           Response.string "" |> Cookie.set ~path:"/" ~max_age:60 "brief" "1")
    |> get "/dated" (fun _ ->
           Response.string ""
           |> Cookie.set ~path:"/" ~expires:(1_000_000_000. +. 30.) "dated" "1")
    |> get "/secure" (fun _ ->
           Response.string "" |> Cookie.set ~path:"/" ~secure:true "s" "1")
    |> get "/elsewhere" (fun _ ->
           Response.string ""
           |> Cookie.set ~path:"/" ~domain:"other.example" "d" "1"))

let test_login_session () =
  let b = C.create cookie_app in
  check_status "anonymous" 401 (C.get b "/me");
  let r = C.post_form b "/login" [ ("user", "ada") ] in
  check_status "redirect" 303 r;
  let me = C.follow b r in
  check_status "followed" 200 me;
  Alcotest.(check string) "session" "ada" me.body;
  Alcotest.(check (option string)) "in the jar" (Some "ada") (C.cookie b "user");
  ignore (C.get b "/logout");
  Alcotest.(check (option string)) "deleted" None (C.cookie b "user");
  check_status "logged out" 401 (C.get b "/me")

let test_paths () =
  let b = C.create cookie_app in
  ignore (C.get b "/admin/set");
  Alcotest.(check string)
    "sent under /admin" "area=admin" (C.get b "/admin/show").body;
  Alcotest.(check string) "not sent above" "" (C.get b "/show").body;
  C.set_cookie b "top" "1";
  Alcotest.(check string)
    "longest path first" "area=admin; top=1" (C.get b "/admin/show?x=1").body

let test_expiry () =
  let memory = In_memory.create ~router:cookie_app () in
  let b = C.create ~memory cookie_app in
  ignore (C.get b "/short");
  ignore (C.get b "/dated");
  Alcotest.(check string) "both" "brief=1; dated=1" (C.get b "/show").body;
  In_memory.advance memory 31.;
  Alcotest.(check string) "Expires passed" "brief=1" (C.get b "/show").body;
  In_memory.advance memory 30.;
  Alcotest.(check string) "Max-Age passed" "" (C.get b "/show").body

let test_secure_and_domain () =
  let https = C.create cookie_app in
  ignore (C.get https "/secure");
  Alcotest.(check string)
    "secure kept over https" "s=1" (C.get https "/show").body;
  let http = C.create ~https:false cookie_app in
  ignore (C.get http "/secure");
  Alcotest.(check (option string))
    "secure refused over http" None (C.cookie http "s");
  ignore (C.get https "/elsewhere");
  Alcotest.(check (option string))
    "another domain's refused" None (C.cookie https "d")

(* {1 CSRF tokens} *)

let form_page ~token =
  Printf.sprintf
    {|<!doctype html><!-- <input name="csrf_token" value="commented"> -->
<script>const s = '<input name="csrf_token" value="scripted">';</script>
<form method=post action=/note>
<INPUT value='%s' type=hidden NAME = csrf_token>
<input name=text></form>|}
    token

let csrf_app expected =
  Router.(
    empty
    |> get "/form" (fun _ -> Response.html (form_page ~token:"a&amp;b&#x27;c"))
    |> get "/meta" (fun _ ->
           Response.html
             {|<head><meta content="m&quot;1" name="csrf-token"></head>|})
    |> get "/plain" (fun _ -> Response.html "<p>nothing</p>")
    |> get "/json" (fun _ -> Json.response (`Assoc []))
    |> post "/note" (fun r ->
           match Form.urlencoded r with
           | Ok fields when List.assoc_opt "csrf_token" fields = Some expected
             ->
               Response.string (List.assoc "text" fields)
           | Ok _ -> Response.error 403 "bad token"
           | Error e -> e))

let test_csrf_input () =
  let b = C.create (csrf_app "a&b'c") in
  Alcotest.(check (option string)) "none yet" None (C.csrf_token b);
  ignore (C.get b "/form");
  Alcotest.(check (option string)) "decoded" (Some "a&b'c") (C.csrf_token b);
  ignore (C.get b "/json");
  Alcotest.(check (option string))
    "kept past JSON" (Some "a&b'c") (C.csrf_token b);
  let r = C.post_form b "/note" [ ("text", "milk") ] in
  check_status "accepted" 200 r;
  Alcotest.(check string) "posted" "milk" r.body;
  ignore (C.get b "/plain");
  Alcotest.(check (option string)) "a page without" None (C.csrf_token b);
  check_status "refused without" 403 (C.post_form b "/note" [ ("text", "x") ])

let test_csrf_meta () =
  let b = C.create (csrf_app "m\"1") in
  ignore (C.get b "/meta");
  Alcotest.(check (option string)) "meta" (Some "m\"1") (C.csrf_token b);
  check_status "posted" 200 (C.post_form b "/note" [ ("text", "x") ])

(* {1 WebSocket} *)

let echo r =
  Websocket.accept r (fun ws ->
      let rec loop () =
        match Websocket.receive ws with
        | `Text s ->
            Websocket.send_text ws ("echo: " ^ s);
            loop ()
        | `Binary s ->
            Websocket.send_binary ws (String.uppercase_ascii s);
            loop ()
        | `Close _ -> ()
      in
      loop ())

let test_ws_echo () =
  let b = C.create Router.(empty |> get "/echo" echo) in
  Braid_fifo.run (fun () ->
      match
        Wsc.connect b "/echo" (fun ws ->
            Wsc.send_text ws "one";
            Wsc.send_binary ws "two";
            let a = Wsc.receive ws in
            let b = Wsc.receive ws in
            (a, b, Wsc.close ws))
      with
      | Ok (`Text "echo: one", `Binary "TWO", (1000, "")) -> ()
      | Ok _ -> Alcotest.fail "unexpected messages"
      | Error r -> Alcotest.failf "refused: %d" r.status)

(* Websocket.until_closed drops messages and gives the client's close. *)
let test_ws_until_closed () =
  let seen = ref (0, "") in
  let drain r =
    Websocket.accept r (fun ws -> seen := Websocket.until_closed ws)
  in
  let b = C.create Router.(empty |> get "/drain" drain) in
  Braid_fifo.run (fun () ->
      match
        Wsc.connect b "/drain" (fun ws ->
            Wsc.send_text ws "ignored";
            Wsc.send_binary ws "ignored too";
            Wsc.close ~code:4000 ~reason:"bye" ws)
      with
      | Ok (4000, _) -> ()
      | Ok (code, _) -> Alcotest.failf "closed with %d" code
      | Error r -> Alcotest.failf "refused: %d" r.status);
  Alcotest.(check (pair int string)) "the close seen" (4000, "bye") !seen

let test_ws_refused () =
  let b = C.create Router.(empty |> get "/echo" echo) in
  Braid_fifo.run (fun () ->
      (match Wsc.connect b "/nowhere" (fun _ -> ()) with
      | Error r -> check_status "404" 404 r
      | Ok () -> Alcotest.fail "connected");
      match
        Wsc.connect
          ~headers:[ ("Origin", "https://evil.example") ]
          b "/echo"
          (fun _ -> ())
      with
      | Error r -> check_status "cross-site refused" 403 r
      | Ok () -> Alcotest.fail "connected")

(* The handshake carries the jar's cookies and the 101's Set-Cookie lands in
   it. *)
let test_ws_cookies () =
  let app =
    Router.(
      empty
      |> get "/ws" (fun r ->
             let user =
               match Cookie.get r "user" with Ok (Some u) -> u | _ -> "?"
             in
             Websocket.accept
               ~headers:[ ("Set-Cookie", "seen=1; Path=/") ]
               r
               (fun ws -> Websocket.send_text ws ("hello " ^ user))))
  in
  let b = C.create app in
  C.set_cookie b "user" "ada";
  Braid_fifo.run (fun () ->
      match Wsc.connect b "/ws" Wsc.receive with
      | Ok (`Text t) -> Alcotest.(check string) "cookie sent" "hello ada" t
      | _ -> Alcotest.fail "no greeting");
  Alcotest.(check (option string)) "cookie kept" (Some "1") (C.cookie b "seen")

let hub_app hub =
  Router.(
    empty
    |> get "/room" (fun r ->
           Websocket.accept r (fun ws ->
               Hub.forward hub ws (fun () ->
                   let rec loop () =
                     match Websocket.receive ws with
                     | `Text t ->
                         Hub.publish hub t;
                         loop ()
                     | _ -> ()
                   in
                   loop ()))))

let rec until_text ws expected =
  match Wsc.receive ws with
  | `Text t when t = expected -> ()
  | `Text _ -> until_text ws expected
  | _ -> Alcotest.failf "closed before %S" expected

(* Two connections of one test: what one sends reaches the other. *)
let test_ws_two_at_once () =
  let hub = Hub.create () in
  let b = C.create (hub_app hub) in
  Braid_fifo.run (fun () ->
      let r =
        Wsc.connect b "/room" (fun first ->
            Wsc.send_text first "first here";
            until_text first "first here";
            Wsc.connect b "/room" (fun second ->
                Wsc.send_text second "hello";
                until_text second "hello";
                until_text first "hello"))
      in
      Alcotest.(check bool) "both connected" true (r = Ok (Ok ())));
  Alcotest.(check int) "both unsubscribed" 0 (Hub.subscribers hub)

(* Each connection on a scheduler of its own domain: a message published by
   the fiber of one reaches the other's connection, written by its own
   loop. *)
let test_ws_across_domains () =
  let hub = Hub.create () in
  let b = C.create (hub_app hub) in
  let listening = Braid_sync.Promise.create () in
  let heard = Braid_sync.Promise.create () in
  let listener =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            Wsc.connect b "/room" (fun ws ->
                Wsc.send_text ws "ready";
                until_text ws "ready";
                Braid_sync.Promise.fill listening ();
                until_text ws "from the other domain";
                Braid_sync.Promise.fill heard ())))
  in
  let talker =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            Braid_sync.Promise.await listening;
            Wsc.connect b "/room" (fun ws ->
                Wsc.send_text ws "from the other domain";
                Braid_sync.Promise.await heard)))
  in
  Alcotest.(check bool) "talker done" true (Domain.join talker = Ok ());
  Alcotest.(check bool) "listener heard" true (Domain.join listener = Ok ())

(* {1 Files on disk} *)

let test_disk_upload_download () =
  let root = Filename.temp_dir "braid-testing" "" |> Unix.realpath in
  let upload r =
    match Handler.body_string r with
    | Error e -> Handler.bad_request e
    | Ok content ->
        let name = Option.get (Handler.param r "name") in
        Braid.Switch.run (fun sw ->
            let f =
              Braid_io.File.open_out ~sw ~create:(`Or_truncate 0o644)
                (Filename.concat root name)
            in
            Braid_io.File.write_string f content);
        Response.string ~status:201 ""
  in
  let app = Router.(empty |> post "/upload/:name" upload) in
  let config = { Config.default with root = Some root } in
  Braid_io.run (fun () ->
      let disk = C.create ~config ~files:`Disk app in
      check_status "uploaded" 201
        (C.post disk ~body:"file content" "/upload/notes.txt");
      let r = C.get disk "/notes.txt" in
      check_status "downloaded" 200 r;
      Alcotest.(check string) "content" "file content" r.body;
      check_status "in memory, not there" 404
        (Testing.call ~config app "/notes.txt"));
  Sys.remove (Filename.concat root "notes.txt");
  Unix.rmdir root

let () =
  Alcotest.run "testing client"
    [
      ( "cookies",
        [
          Alcotest.test_case "log-in session" `Quick test_login_session;
          Alcotest.test_case "paths" `Quick test_paths;
          Alcotest.test_case "expiry on the memory's clock" `Quick test_expiry;
          Alcotest.test_case "secure and domain" `Quick test_secure_and_domain;
        ] );
      ( "csrf",
        [
          Alcotest.test_case "hidden input" `Quick test_csrf_input;
          Alcotest.test_case "meta" `Quick test_csrf_meta;
        ] );
      ( "websocket",
        [
          Alcotest.test_case "echo" `Quick test_ws_echo;
          Alcotest.test_case "until closed" `Quick test_ws_until_closed;
          Alcotest.test_case "refused" `Quick test_ws_refused;
          Alcotest.test_case "cookies" `Quick test_ws_cookies;
          Alcotest.test_case "two at once" `Quick test_ws_two_at_once;
          Alcotest.test_case "across domains" `Quick test_ws_across_domains;
        ] );
      ( "files",
        [
          Alcotest.test_case "upload then download" `Quick
            test_disk_upload_download;
        ] );
    ]
