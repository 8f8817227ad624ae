(* Sessions, per-request fields, CSRF, flash messages and encrypted cookies,
   through the whole server in memory (Testing.call). *)

open Braid_web
open Braid_server

let check_int = Alcotest.(check int)
let check_string = Alcotest.(check string)
let check_bool = Alcotest.(check bool)

module Str_contains = struct
  (* The index of [sub] in [s]; raises Not_found. *)
  let find s sub =
    let n = String.length s and m = String.length sub in
    let rec go i =
      if i + m > n then raise Not_found
      else if String.sub s i m = sub then i
      else go (i + 1)
    in
    go 0

  let contains s sub =
    match find s sub with _ -> true | exception Not_found -> false
end

(* {1 A cookie jar} *)

(* The [name=value] of every Set-Cookie of [r], and whether it deletes. *)
let set_cookies (r : Testing.response) =
  List.map
    (fun line ->
      let pair = List.hd (String.split_on_char ';' line) in
      let i = String.index pair '=' in
      ( String.sub pair 0 i,
        String.sub pair (i + 1) (String.length pair - i - 1),
        Str_contains.contains line "Max-Age=0" ))
    (Testing.headers r "set-cookie")

(* A browser's jar, simplified: one value per name, dropped on Max-Age=0. *)
let update jar r =
  List.fold_left
    (fun jar (name, value, deleted) ->
      let jar = List.remove_assoc name jar in
      if deleted then jar else (name, value) :: jar)
    jar (set_cookies r)

let cookie_header jar =
  match jar with
  | [] -> []
  | _ ->
      [
        ("Cookie", String.concat "; " (List.map (fun (n, v) -> n ^ "=" ^ v) jar));
      ]

(* A client with a jar: each call sends the jar's cookies and keeps those
   the response sets. *)
let client ?memory app =
  let jar = ref [] in
  let call ?(meth = Braid_http.Method.GET) ?(headers = []) ?body target =
    let r =
      Testing.call ~meth
        ~headers:(cookie_header !jar @ headers)
        ?body ?memory app target
    in
    jar := update !jar r;
    r
  in
  (call, jar)

let session_cookie jar = List.assoc_opt "__Host-session" jar

(* {1 An application} *)

let who r = Option.value (Session.get r "user") ~default:"anonymous"

let app ?(store = Session.memory ()) ?idle_timeout ?lifetime () =
  Router.(
    empty
    |> use (Session.middleware ?idle_timeout ?lifetime store)
    |> get "/me" (fun r -> Response.string (who r))
    |> get "/visited" (fun r ->
           Response.string
             (Option.value (Session.get r "visited") ~default:"no"))
    |> get "/visit" (fun r ->
           Session.set r "visited" "yes";
           Response.string "ok")
    |> post "/login" (fun r ->
           Session.rotate r;
           Session.set r "user" "ada";
           Response.redirect ~status:303 "/me")
    |> post "/logout" (fun r ->
           Session.invalidate r;
           Response.redirect ~status:303 "/me")
    |> get "/big" (fun r ->
           Session.set r "big" (String.make 5000 'x');
           Response.string "too big")
    |> get "/form" (fun r -> Response.html ("<form>" ^ Csrf.tag r ^ "</form>"))
    |> get "/token" (fun r -> Response.string (Csrf.token r))
    |> post "/notes" (fun r ->
           match Form.urlencoded r with
           | Ok fields ->
               Response.string
                 (String.concat ","
                    (List.map (fun (n, v) -> n ^ "=" ^ v) fields))
           | Error e -> e)
    |> post "/flash" (fun r ->
           Flash.add r "saved";
           Flash.add ~category:"error" r "twice";
           (* Not shown in the request that adds it. *)
           Response.string (string_of_int (List.length (Flash.take r))))
    |> get "/flash" (fun r ->
           Response.string
             (String.concat ";"
                (List.map (fun (c, m) -> c ^ ":" ^ m) (Flash.take r))))
    |> get "/error" (fun r ->
           Session.set r "user" "bob";
           Response.error 404 "kept anyway")
    |> get "/stream" (fun r ->
           Response.stream (fun w ->
               Response.Writer.write w (who r);
               match Session.set r "late" "x" with
               | () -> Response.Writer.write w " changed"
               | exception Invalid_argument _ ->
                   Response.Writer.write w " refused"))
    |> scope ~middleware:[ Csrf.require_header ] "/api"
         (empty
         |> post "/notes" (fun _ -> Json.response ~status:201 (`Assoc []))
         |> get "/notes" (fun _ -> Json.response (`List []))))

(* {1 Sessions} *)

(* The same test against one application value, whose store the client and
   the attacker share. *)
let login_rotates_old_id_dead () =
  let application = app () in
  let call, jar = client application in
  ignore (call "/visit");
  let before = Option.get (session_cookie !jar) in
  ignore (call ~meth:POST "/login");
  let after = Option.get (session_cookie !jar) in
  check_bool "rotated" false (String.equal before after);
  let with_cookie ?(target = "/me") id =
    Testing.call
      ~headers:[ ("Cookie", "__Host-session=" ^ id) ]
      application target
  in
  check_string "the values kept" "yes"
    (with_cookie ~target:"/visited" after).body;
  check_string "the old id's record is gone" "no"
    (with_cookie ~target:"/visited" before).body;
  check_string "the new id works" "ada" (with_cookie after).body;
  let r = with_cookie before in
  check_string "the old id no longer works" "anonymous" r.body;
  check_bool "and its cookie is dropped" true
    (List.exists (fun (_, _, deleted) -> deleted) (set_cookies r))

let cookie_flags () =
  let call, _ = client (app ()) in
  let r = call "/visit" in
  match Testing.headers r "set-cookie" with
  | [ line ] ->
      List.iter
        (fun attribute ->
          check_bool attribute true (Str_contains.contains line attribute))
        [
          "__Host-session=";
          "Path=/";
          "Secure";
          "HttpOnly";
          "SameSite=Lax";
          "Max-Age=86400";
        ];
      check_bool "no Domain" false (Str_contains.contains line "Domain")
  | l -> Alcotest.failf "%d Set-Cookie fields" (List.length l)

let no_session_no_cookie () =
  let call, _ = client (app ()) in
  let r = call "/me" in
  check_string "anonymous" "anonymous" r.body;
  check_int "no cookie for a request that stores nothing" 0
    (List.length (Testing.headers r "set-cookie"))

let logout_invalidates () =
  let application = app () in
  let call, jar = client application in
  ignore (call ~meth:POST "/login");
  let id = Option.get (session_cookie !jar) in
  let r = call ~meth:POST "/logout" in
  check_bool "cookie deleted" true
    (List.exists
       (fun (n, _, deleted) -> n = "__Host-session" && deleted)
       (set_cookies r));
  check_string "logged out" "anonymous" (call "/me").body;
  let replay =
    Testing.call
      ~headers:[ ("Cookie", "__Host-session=" ^ id) ]
      application "/me"
  in
  check_string "a copy of the old cookie is dead" "anonymous" replay.body

let error_response_saves () =
  let call, _ = client (app ()) in
  check_int "404" 404 (call "/error").status;
  check_string "saved with an error status" "bob" (call "/me").body

let expiry () =
  let memory = In_memory.create () in
  let application = app ~idle_timeout:100. ~lifetime:1000. () in
  let call, _ = client ~memory application in
  ignore (call ~meth:POST "/login");
  In_memory.advance memory 99.;
  check_string "within the idle timeout" "ada" (call "/me").body;
  (* 99 s is past a tenth of the idle timeout: that request slid it. *)
  In_memory.advance memory 99.;
  check_string "slid forward" "ada" (call "/me").body;
  In_memory.advance memory 101.;
  check_string "idle too long" "anonymous" (call "/me").body;
  (* Absolute lifetime: active every 50 s, still ends at 1000 s. *)
  ignore (call ~meth:POST "/login");
  for _ = 1 to 19 do
    In_memory.advance memory 50.;
    check_string "active" "ada" (call "/me").body
  done;
  In_memory.advance memory 51.;
  check_string "past its lifetime" "anonymous" (call "/me").body

let stream_reads_session () =
  let call, _ = client (app ()) in
  ignore (call ~meth:POST "/login");
  check_string "a stream reads, cannot change" "ada refused"
    (call "/stream").body

(* {1 The cookie store} *)

let secret = String.make 32 'k'

let cookie_store () =
  let keys = Encrypted.keys [ secret ] in
  let application = app ~store:(Session.cookie ~keys) () in
  let call, jar = client application in
  ignore (call ~meth:POST "/login");
  check_string "roundtrip" "ada" (call "/me").body;
  let value = Option.get (session_cookie !jar) in
  check_bool "not readable" false (Str_contains.contains value "ada");
  let tampered =
    let b = Bytes.of_string value in
    let i = String.length value / 2 in
    Bytes.set b i (if value.[i] = 'A' then 'B' else 'A');
    Bytes.to_string b
  in
  let r =
    Testing.call
      ~headers:[ ("Cookie", "__Host-session=" ^ tampered) ]
      application "/me"
  in
  check_string "tampered: no session" "anonymous" r.body;
  (* Another key (a rotated-out one) is refused too; a new first key with
     the old second reads it. *)
  let rotated =
    app
      ~store:
        (Session.cookie ~keys:(Encrypted.keys [ String.make 32 'n'; secret ]))
      ()
  in
  let with_value application =
    (Testing.call
       ~headers:[ ("Cookie", "__Host-session=" ^ value) ]
       application "/me")
      .body
  in
  check_string "rotation keeps old cookies" "ada" (with_value rotated);
  let other =
    app ~store:(Session.cookie ~keys:(Encrypted.keys [ String.make 32 'n' ])) ()
  in
  check_string "another key" "anonymous" (with_value other);
  check_int "too large: 500" 500 (call "/big").status

(* {1 The memory store from two domains} *)

let two_domains () =
  let application = app () in
  let login_and_read () =
    let call, jar = client application in
    ignore (call ~meth:POST "/login");
    let ok = ref true in
    for _ = 1 to 200 do
      ignore (call "/visit");
      if (call "/me").body <> "ada" then ok := false
    done;
    (!ok, Option.get (session_cookie !jar))
  in
  let a = Domain.spawn login_and_read and b = Domain.spawn login_and_read in
  let ok_a, id_a = Domain.join a and ok_b, id_b = Domain.join b in
  check_bool "domain 1 kept its session" true ok_a;
  check_bool "domain 2 kept its session" true ok_b;
  (* A session saved on one domain is read on another. *)
  let read id =
    Domain.join
      (Domain.spawn (fun () ->
           (Testing.call
              ~headers:[ ("Cookie", "__Host-session=" ^ id) ]
              application "/me")
             .body))
  in
  check_string "read from a third domain" "ada" (read id_a);
  check_string "and the other" "ada" (read id_b)

(* The memory store keeps at most [max_sessions]: past the cap, the tenth
   that expire soonest go (here all expire together, so any two of eleven). *)
let memory_cap () =
  let application = app ~store:(Session.memory ~max_sessions:10 ()) () in
  let clients =
    List.init 11 (fun _ ->
        let call, _ = client application in
        ignore (call ~meth:POST "/login");
        fun target -> call target)
  in
  let logged_in =
    List.filter
      (fun call -> (call "/me" : Testing.response).body = "ada")
      clients
  in
  check_int "two of eleven dropped at the cap" 9 (List.length logged_in);
  Alcotest.check_raises "a cap below 1"
    (Invalid_argument "Session.memory: max_sessions < 1") (fun () ->
      ignore (Session.memory ~max_sessions:0 ()))

(* {1 CSRF} *)

let scrape_token html =
  let marker = {|name="csrf_token" value="|} in
  let i = Str_contains.find html marker + String.length marker in
  String.sub html i (String.index_from html i '"' - i)

let form_headers = [ ("Content-Type", "application/x-www-form-urlencoded") ]

let forged_form () =
  let call, _ = client (app ()) in
  let token = scrape_token (call "/form").body in
  let post body = call ~meth:POST ~headers:form_headers ~body "/notes" in
  let r = post "text=milk" in
  check_int "no token: 403" 403 r.status;
  check_bool "says why" true (Str_contains.contains r.body "CSRF token missing");
  check_int "forged token: 403" 403
    (post ("text=milk&csrf_token=" ^ String.make 64 'A')).status;
  check_int "garbage token: 403" 403 (post "text=milk&csrf_token=x").status;
  let r = post ("text=milk&csrf_token=" ^ token) in
  check_int "valid token" 200 r.status;
  check_string "token left out" "text=milk" r.body;
  (* A token of another session (the attacker's own) does not pass. *)
  let other_call, _ = client (app ()) in
  let other_token = scrape_token (other_call "/form").body in
  check_int "another session's token" 403
    (post ("text=milk&csrf_token=" ^ other_token)).status;
  (* A victim without a session at all. *)
  let r =
    Testing.call ~meth:POST ~headers:form_headers
      ~body:("text=milk&csrf_token=" ^ token)
      (app ()) "/notes"
  in
  check_int "no session" 403 r.status

let token_dies_at_rotation () =
  let call, _ = client (app ()) in
  let token = scrape_token (call "/form").body in
  ignore (call ~meth:POST "/login");
  check_int "a token from before log-in" 403
    (call ~meth:POST ~headers:form_headers
       ~body:("a=1&csrf_token=" ^ token)
       "/notes")
      .status

let json_api () =
  let call, _ = client (app ()) in
  let token = (call "/token").body in
  let json = [ ("Content-Type", "application/json") ] in
  check_int "GET needs none" 200 (call "/api/notes").status;
  check_int "POST without the header" 403
    (call ~meth:POST ~headers:json ~body:"{}" "/api/notes").status;
  check_int "POST with a wrong one" 403
    (call ~meth:POST
       ~headers:(("X-CSRF-Token", String.make 64 'A') :: json)
       ~body:"{}" "/api/notes")
      .status;
  check_int "POST with the header" 201
    (call ~meth:POST
       ~headers:(("X-CSRF-Token", token) :: json)
       ~body:"{}" "/api/notes")
      .status

(* {2 Multipart} *)

let boundary = "XyZ"

let multipart parts =
  String.concat ""
    (List.map
       (fun (name, filename, content) ->
         Printf.sprintf
           "--%s\r\nContent-Disposition: form-data; name=%S%s\r\n\r\n%s\r\n"
           boundary name
           (match filename with
           | Some f -> Printf.sprintf "; filename=%S" f
           | None -> "")
           content)
       parts)
  ^ "--" ^ boundary ^ "--\r\n"

let multipart_headers =
  [ ("Content-Type", "multipart/form-data; boundary=" ^ boundary) ]

(* An upload route whose consumer records every event it is given. *)
let upload_app seen =
  Router.(
    empty
    |> use (Session.middleware (Session.memory ()))
    |> get "/form" (fun r -> Response.html (Csrf.tag r))
    |> post "/upload" (fun r ->
           match
             Multipart.try_fold r ~init:() (fun () event ->
                 (match event with
                 | Multipart.Part p -> seen := ("part " ^ p.name) :: !seen
                 | Data d -> seen := ("data " ^ d) :: !seen
                 | End_of_part -> ());
                 Ok ())
           with
           | Ok () -> Response.string "stored"
           | Error e -> e))

let multipart_csrf () =
  let seen = ref [] in
  let call, _ = client (upload_app seen) in
  let token = scrape_token (call "/form").body in
  let upload parts =
    seen := [];
    call ~meth:POST ~headers:multipart_headers ~body:(multipart parts) "/upload"
  in
  let r = upload [ ("file", Some "a.txt", "secret file") ] in
  check_int "missing token: 403" 403 r.status;
  check_bool "says why" true (Str_contains.contains r.body "CSRF token missing");
  Alcotest.(check (list string)) "the consumer was never called" [] !seen;
  let r =
    upload
      [
        ("csrf_token", None, String.make 64 'A');
        ("file", Some "a.txt", "secret file");
      ]
  in
  check_int "wrong token: 403" 403 r.status;
  Alcotest.(check (list string)) "never called either" [] !seen;
  let r =
    upload
      [ ("file", Some "a.txt", "secret file"); ("csrf_token", None, token) ]
  in
  check_int "file before the token: 403" 403 r.status;
  Alcotest.(check (list string)) "not called for the file" [] !seen;
  let r = upload [ ("title", None, "t"); ("file", Some "a.txt", "x") ] in
  check_int "only fields and a file, no token" 403 r.status;
  Alcotest.(check (list string)) "held-back field not delivered" [] !seen;
  let r =
    upload
      [
        ("title", None, "t");
        ("csrf_token", None, token);
        ("file", Some "a.txt", "x");
      ]
  in
  check_int "valid" 200 r.status;
  Alcotest.(check (list string))
    "fields before the token delivered after it, the token not"
    [ "part title"; "data t"; "part file"; "data x" ]
    (List.rev !seen)

let try_fold_stops () =
  let reads = ref 0 in
  let r =
    Handler.request_for_test ~meth:POST ~headers:multipart_headers
      ~body:(multipart [ ("a", None, "1"); ("b", None, "2") ])
      "/"
  in
  match
    Multipart.try_fold r ~init:() (fun () -> function
      | Part { name = "a"; _ } -> Error (Response.error 422 "no a")
      | _ ->
          incr reads;
          Ok ())
  with
  | Error e ->
      check_int "stopped with its answer" 422 e.status;
      check_int "nothing after" 0 !reads
  | Ok () -> Alcotest.fail "did not stop"

let check_origin () =
  let request headers = Handler.request_for_test ~headers "/" in
  let ok headers = Result.is_ok (Csrf.check_origin (request headers)) in
  let host = ("Host", "app.example") in
  check_bool "same origin" true (ok [ host; ("Origin", "https://app.example") ]);
  check_bool "another site" false
    (ok [ host; ("Origin", "https://evil.example") ]);
  check_bool "null" false (ok [ host; ("Origin", "null") ]);
  check_bool "referer" true
    (ok [ host; ("Referer", "https://app.example/a?b") ]);
  check_bool "referer elsewhere" false
    (ok [ host; ("Referer", "https://app.example.evil.example/") ]);
  check_bool "port differs" false
    (ok [ host; ("Origin", "https://app.example:8443") ]);
  check_bool "neither" false (ok [ host ])

(* {1 Flash} *)

let flash_once () =
  let call, _ = client (app ()) in
  check_string "not in the request that adds" "0"
    (call ~meth:POST "/flash").body;
  check_string "in the next" "info:saved;error:twice" (call "/flash").body;
  check_string "read once" "" (call "/flash").body

(* {1 Fields} *)

let fields () =
  let user : string Field.t = Field.create ~name:"user" () in
  check_bool "unset" true (Field.get user = None);
  let in_fiber = ref None and in_task = ref None in
  Field.with_value user "ada" (fun () ->
      Braid_fifo.run (fun () ->
          ignore (Braid.Fiber.fork (fun () -> in_fiber := Field.get user)));
      Braid_pool.with_pool ~domains:1 (fun pool ->
          in_task :=
            Braid_sync.Promise.await
              (Braid_pool.async pool (fun () -> Field.get user))));
  Alcotest.(check (option string)) "in a forked fiber" (Some "ada") !in_fiber;
  Alcotest.(check (option string)) "in a pool task" (Some "ada") !in_task;
  check_bool "gone after" true (Field.get user = None);
  let other : string Field.t = Field.create ~name:"user" () in
  Field.with_value user "ada" (fun () ->
      check_bool "another field of the same name" true (Field.get other = None))

(* {1 Encrypted cookies} *)

let encrypted_cookie () =
  let keys = Encrypted.keys [ secret ] in
  let response =
    Response.string "" |> Cookie.set_encrypted ~keys "draft" "my secret"
  in
  let line = Option.get (Response.header response "set-cookie") in
  check_bool "secure defaults" true
    (List.for_all
       (Str_contains.contains line)
       [ "Secure"; "HttpOnly"; "SameSite=Lax"; "Path=/" ]);
  check_bool "not readable" false (Str_contains.contains line "secret");
  let value =
    let pair = List.hd (String.split_on_char ';' line) in
    String.sub pair 6 (String.length pair - 6)
  in
  let get ?(keys = keys) ?(name = "draft") value =
    Cookie.get_encrypted ~keys
      (Handler.request_for_test ~headers:[ ("Cookie", name ^ "=" ^ value) ] "/")
      name
  in
  check_bool "roundtrip" true (get value = Ok (Cookie.Valid "my secret"));
  check_bool "bound to its name" true
    (get ~name:"other" value = Ok (Cookie.Invalid Signed.Tampered));
  (* Every character changed, one at a time, is refused. *)
  String.iteri
    (fun i c ->
      let b = Bytes.of_string value in
      Bytes.set b i (if c = 'A' then 'B' else 'A');
      check_bool
        (Printf.sprintf "character %d changed" i)
        true
        (match get (Bytes.to_string b) with
        | Ok (Cookie.Invalid _) -> true
        | _ -> false))
    value;
  check_bool "cut" true
    (get (String.sub value 0 20) = Ok (Cookie.Invalid Signed.Not_signed));
  let newer = Encrypted.keys [ String.make 32 'n'; secret ] in
  check_bool "rotation: an old cookie reads" true
    (get ~keys:newer value = Ok (Cookie.Valid "my secret"));
  check_bool "the old key dropped" true
    (get ~keys:(Encrypted.keys [ String.make 32 'n' ]) value
    = Ok (Cookie.Invalid Signed.Tampered));
  check_bool "fresh nonce: two seals differ" false
    (String.equal
       (Encrypted.encrypt keys ~name:"a" "v")
       (Encrypted.encrypt keys ~name:"a" "v"));
  check_bool "short secret refused" true
    (match Encrypted.keys [ "short" ] with
    | _ -> false
    | exception Invalid_argument _ -> true);
  let long = String.init 3000 (fun i -> Char.chr (i land 255)) in
  check_bool "any bytes" true
    (Encrypted.decrypt keys ~name:"x" (Encrypted.encrypt keys ~name:"x" long)
    = Ok long)

let () =
  Alcotest.run "sessions"
    [
      ( "session",
        [
          Alcotest.test_case "log-in rotates the id; the old one is dead" `Quick
            login_rotates_old_id_dead;
          Alcotest.test_case "cookie flags" `Quick cookie_flags;
          Alcotest.test_case "no session, no cookie" `Quick no_session_no_cookie;
          Alcotest.test_case "log-out invalidates" `Quick logout_invalidates;
          Alcotest.test_case "an error response saves" `Quick
            error_response_saves;
          Alcotest.test_case "idle and absolute expiry" `Quick expiry;
          Alcotest.test_case "a stream reads the session" `Quick
            stream_reads_session;
          Alcotest.test_case "cookie store: roundtrip, tamper, rotation, size"
            `Quick cookie_store;
          Alcotest.test_case "memory store from two domains" `Quick two_domains;
          Alcotest.test_case "memory store cap" `Quick memory_cap;
        ] );
      ( "csrf",
        [
          Alcotest.test_case "forged form: 403" `Quick forged_form;
          Alcotest.test_case "token dies at rotation" `Quick
            token_dies_at_rotation;
          Alcotest.test_case "JSON API header" `Quick json_api;
          Alcotest.test_case "multipart: refused before the file" `Quick
            multipart_csrf;
          Alcotest.test_case "try_fold stops early" `Quick try_fold_stops;
          Alcotest.test_case "origin check" `Quick check_origin;
        ] );
      ( "flash",
        [ Alcotest.test_case "read once, next request" `Quick flash_once ] );
      ("field", [ Alcotest.test_case "follows fibers and tasks" `Quick fields ]);
      ( "encrypted",
        [
          Alcotest.test_case "roundtrip, tamper, rotation" `Quick
            encrypted_cookie;
        ] );
    ]
