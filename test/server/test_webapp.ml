(* Web applications in memory (Testing.call): the request helpers on good
   and bad input, middleware that sees every response, error pages, static
   files as a route, header order. *)

open Braid_server
open Braid_web
open Handler.Syntax

let now = 1_000_000_000.
let check_int = Alcotest.(check int)
let check_string = Alcotest.(check string)
let check_opt = Alcotest.(check (option string))

let files () =
  let m = In_memory.create ~now () in
  In_memory.add_file m ~mtime:(now -. 3600.) "/srv/www/a.txt" "0123456789";
  In_memory.add_file m "/srv/www/docs/index.html" "docs";
  m

let config = { Config.default with root = Some "/srv/www" }

let contains s sub =
  let n = String.length sub in
  let rec go i =
    i + n <= String.length s && (String.sub s i n = sub || go (i + 1))
  in
  go 0

(* {1 Responses} *)

let header_order () =
  let r =
    Response.string "x"
    |> Response.with_header "X-A" "1"
    |> Response.with_header "X-B" "2"
    |> Response.with_header "X-A" "3"
  in
  Alcotest.(check (list (pair string string)))
    "in the order added"
    [
      ("Content-Type", "text/plain; charset=utf-8");
      ("X-A", "1");
      ("X-B", "2");
      ("X-A", "3");
    ]
    r.headers;
  (* And on the wire. *)
  let app = Router.(empty |> get "/" (fun _ -> r)) in
  let w = Testing.call app "/" in
  Alcotest.(check (list string)) "wire" [ "1"; "3" ] (Testing.headers w "x-a");
  let names = List.map fst w.headers in
  let index n =
    let rec go i = function
      | [] -> -1
      | x :: rest -> if String.equal x n then i else go (i + 1) rest
    in
    go 0 names
  in
  Alcotest.(check bool) "X-A before X-B" true (index "X-A" < index "X-B")

(* {1 Query and forms} *)

let query_decode () =
  let ok = Alcotest.(result (list (pair string string)) string) in
  Alcotest.check ok "plus is a space, %2B a plus"
    (Ok [ ("q", "a b+c"); ("x", ""); ("y", "1") ])
    (Query.decode "q=a+b%2Bc&x&&y=1");
  Alcotest.check ok "utf-8 bytes" (Ok [ ("n", "é") ]) (Query.decode "n=%C3%A9");
  List.iter
    (fun bad ->
      match Query.decode bad with
      | Error why -> Alcotest.(check bool) bad true (contains why "percent")
      | Ok _ -> Alcotest.failf "%S accepted" bad)
    [ "a=%"; "a=%4"; "a=%zz"; "%G1=1"; "ok=1&b=100%" ];
  Alcotest.check ok "encode round trip"
    (Ok [ ("a b", "x&y=z+%") ])
    (Query.decode (Query.encode [ ("a b", "x&y=z+%") ]))

let search r =
  let* q = Query.get r "q" in
  let* tags = Query.get_all r "tag" in
  Response.string (Option.value q ~default:"-" ^ "|" ^ String.concat "," tags)

let query_route () =
  let app = Router.(empty |> get "/search" search) in
  let r = Testing.call app "/search?q=hello+world&tag=a&tag=b%26c" in
  check_int "200" 200 r.status;
  check_string "decoded" "hello world|a,b&c" r.body;
  let r = Testing.call app "/search?q=100%" in
  check_int "malformed percent-encoding: 400" 400 r.status;
  Alcotest.(check bool) "says why" true (contains r.body "percent-encoding");
  let r = Testing.call app "/search" in
  check_string "no query" "-|" r.body

let form_route () =
  let app =
    Router.(
      empty
      |> add ~max_body:64 POST "/login" (fun r ->
             let* form = Form.urlencoded r in
             Response.string
               (String.concat ";" (List.map (fun (n, v) -> n ^ "=" ^ v) form))))
  in
  let post ?(ct = "application/x-www-form-urlencoded") body =
    Testing.call ~meth:POST ~headers:[ ("Content-Type", ct) ] ~body app "/login"
  in
  let r = post "user=ada+l&pw=%26x" in
  check_int "200" 200 r.status;
  check_string "decoded" "user=ada l;pw=&x" r.body;
  let r = post ~ct:"application/x-www-form-urlencoded; charset=utf-8" "a=1" in
  check_string "with parameters" "a=1" r.body;
  check_int "bad escape: 400" 400 (post "user=%E").status;
  check_int "another type: 415" 415 (post ~ct:"text/plain" "a=1").status;
  check_int "above the route's limit: 413" 413
    (post (String.make 100 'a')).status

(* {1 Cookies} *)

let cookie_parse () =
  let ok = Alcotest.(result (list (pair string string)) string) in
  Alcotest.check ok "RFC form"
    (Ok [ ("a", "1"); ("b", "two") ])
    (Cookie.parse "a=1; b=two");
  Alcotest.check ok "what browsers send"
    (Ok [ ("a", "1"); ("b", "x y"); ("c", ""); ("d", "é,\\") ])
    (Cookie.parse "a=1;b=\"x y\" ;;  c= ; nameless; d=é,\\;");
  List.iter
    (fun bad ->
      match Cookie.parse bad with
      | Error _ -> ()
      | Ok _ -> Alcotest.failf "%S accepted" bad)
    [ "a b=1"; "=1"; "(x)=1"; "a=\"1"; "a=x\"y"; "a=1\001"; "a=1; b c=2" ]

let cookie_route () =
  let app =
    Router.(
      empty
      |> get "/" (fun r ->
             let* session = Cookie.get r "session" in
             Response.string (Option.value session ~default:"none")))
  in
  let call cookies =
    Testing.call ~headers:(List.map (fun c -> ("Cookie", c)) cookies) app "/"
  in
  check_string "found" "s1" (call [ "theme=dark; session=s1" ]).body;
  check_string "in a second field" "s2" (call [ "a=1"; "session=s2" ]).body;
  check_string "absent" "none" (call []).body;
  let r = call [ "session=s1; bad name=1" ] in
  check_int "garbage: 400" 400 r.status;
  Alcotest.(check bool) "says why" true (contains r.body "cookie name")

let set_cookie () =
  check_string "every attribute, in order"
    "id=abc; Max-Age=60; Expires=Sun, 09 Sep 2001 01:46:40 GMT; Path=/app; \
     Domain=example.org; Secure; HttpOnly; SameSite=Strict"
    (Cookie.set_cookie ~max_age:60 ~expires:now ~path:"/app"
       ~domain:"example.org" ~secure:true ~http_only:true ~same_site:Strict "id"
       "abc");
  check_string "minimal" "a=" (Cookie.set_cookie "a" "");
  let refused name f =
    match f () with
    | (_ : string) -> Alcotest.failf "%s: accepted" name
    | exception Invalid_argument _ -> ()
  in
  refused "value with ;" (fun () -> Cookie.set_cookie "a" "1; Domain=evil");
  refused "value with CRLF" (fun () ->
      Cookie.set_cookie "a" "1\r\nSet-Cookie: x=y");
  refused "value with space" (fun () -> Cookie.set_cookie "a" "x y");
  refused "name not a token" (fun () -> Cookie.set_cookie "a b" "1");
  refused "path with ;" (fun () -> Cookie.set_cookie ~path:"/; Secure" "a" "1");
  refused "path with LF" (fun () -> Cookie.set_cookie ~path:"/\nX: y" "a" "1");
  refused "domain" (fun () -> Cookie.set_cookie ~domain:"a.org; x" "a" "1");
  refused "SameSite=None without Secure" (fun () ->
      Cookie.set_cookie ~same_site:None_ "a" "1");
  (* On the wire: two fields, in order; a handler that tries to inject gets
     a 500, not a split response. *)
  let app =
    Router.(
      empty
      |> get "/" (fun _ ->
             Response.string "ok" |> Cookie.set "a" "1"
             |> Cookie.delete ~path:"/" "b")
      |> get "/inject" (fun r ->
             let* v = Query.get r "v" in
             Response.string "ok" |> Cookie.set "a" (Option.get v)))
  in
  let r = Testing.call app "/" in
  Alcotest.(check (list string))
    "fields"
    [ "a=1"; "b=; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/" ]
    (Testing.headers r "set-cookie");
  let r = Testing.call app "/inject?v=1%0D%0ASet-Cookie:%20admin=1" in
  check_int "500" 500 r.status;
  Alcotest.(check (list string)) "no cookie" [] (Testing.headers r "set-cookie")

(* {1 JSON} *)

let json () =
  let app =
    Router.(
      empty
      |> post "/echo" (fun r ->
             let* j = Json.body r in
             Json.response ~status:201 (`Assoc [ ("got", j) ])))
  in
  let post ?(headers = [ ("Content-Type", "application/json") ]) body =
    Testing.call ~meth:POST ~headers ~body app "/echo"
  in
  let r = post {|{"a": [1, "x"]}|} in
  check_int "201" 201 r.status;
  check_opt "type" (Some "application/json") (Testing.header r "content-type");
  check_string "body" {|{"got":{"a":[1,"x"]}}|} r.body;
  check_int "no type is fine" 201 (post ~headers:[] "1").status;
  check_int "+json" 201
    (post ~headers:[ ("Content-Type", "application/ld+json") ] "1").status;
  List.iter
    (fun bad ->
      let r = post bad in
      check_int (Printf.sprintf "%S: 400" bad) 400 r.status;
      Alcotest.(check bool)
        "says invalid JSON" true
        (contains r.body "invalid JSON"))
    [
      "";
      "{";
      {|{"a": }|};
      "[1] x";
      "nul";
      String.make 1_000_000 '[';
      String.make 513 '[' ^ String.make 513 ']';
    ];
  check_int "512 deep is fine" 201
    (post (String.make 512 '[' ^ {|"[[["|} ^ String.make 512 ']')).status;
  check_int "another type: 415" 415
    (post ~headers:[ ("Content-Type", "text/plain") ] "1").status

(* {1 Multipart} *)

let multipart_body ?(boundary = "XyZ") parts =
  String.concat ""
    (List.map
       (fun (head, content) ->
         "--" ^ boundary ^ "\r\n" ^ head ^ "\r\n\r\n" ^ content ^ "\r\n")
       parts)
  ^ "--" ^ boundary ^ "--\r\n"

let upload_app =
  let limits =
    { Multipart.max_parts = 3; max_part_size = 40_000; max_header_bytes = 200 }
  in
  Router.(
    empty
    |> post "/upload" (fun r ->
           (* Streamed: the file's bytes are counted, never kept. *)
           let* events =
             Multipart.fold ~limits r ~init:[] (fun acc -> function
               | Multipart.Part p ->
                   Printf.sprintf "part %s%s%s" p.name
                     (match p.filename with
                     | Some f -> " file " ^ f
                     | None -> "")
                     (match p.content_type with
                     | Some t -> " " ^ t
                     | None -> "")
                   :: acc
               | Data d -> (
                   match acc with
                   | x :: rest when String.starts_with ~prefix:"data " x ->
                       let n =
                         int_of_string (String.sub x 5 (String.length x - 5))
                       in
                       Printf.sprintf "data %d" (n + String.length d) :: rest
                   | _ -> Printf.sprintf "data %d" (String.length d) :: acc)
               | End_of_part -> "end" :: acc)
           in
           Response.string (String.concat "\n" (List.rev events)))
    |> post "/form" (fun r ->
           let* parts = Multipart.parts r in
           Response.string
             (String.concat ";"
                (List.map
                   (fun ((p : Multipart.part), v) -> p.name ^ "=" ^ v)
                   parts))))

(* Contents full of what starts a delimiter ("\r", "\r\n", "\r\n--Xy"...)
   come out whole, wherever the reads cut them; and searching for the
   delimiter allocates nothing per candidate byte: a 1 MB part of CRs costs
   the same few words per byte as any other (the reads' copies), where a
   String.sub per CR cost several more. *)
let multipart_cr_heavy () =
  let ct = [ ("Content-Type", "multipart/form-data; boundary=XyZ") ] in
  let cd name =
    Printf.sprintf {|Content-Disposition: form-data; name="%s"|} name
  in
  let parts body =
    match
      Multipart.parts
        ~limits:{ Multipart.default_limits with max_part_size = 2_000_000 }
        (Handler.request_for_test ~meth:POST ~headers:ct ~body "/")
    with
    | Ok l -> List.map (fun ((p : Multipart.part), v) -> (p.name, v)) l
    | Error r -> Alcotest.failf "refused: %d" r.status
  in
  let tricky =
    [
      String.make 40_000 '\r';
      String.concat "" (List.init 5_000 (fun _ -> "\r\n-"));
      String.concat "" (List.init 3_000 (fun _ -> "\r\n--Xy\r\n--X"));
      "\r\n--XyY" ^ String.make 16_380 'a' ^ "\r\n--Xy";
      "\r";
      "";
    ]
  in
  let named = List.mapi (fun i c -> (Printf.sprintf "p%d" i, c)) tricky in
  let got = parts (multipart_body (List.map (fun (n, c) -> (cd n, c)) named)) in
  Alcotest.(check int) "parts" (List.length named) (List.length got);
  List.iter2
    (fun (n, c) (n', c') ->
      check_string "name" n n';
      Alcotest.(check bool)
        (Printf.sprintf "%s: %d bytes whole" n (String.length c))
        true (c = c'))
    named got;
  (* The allocation of parsing a 1 MB part of CRs, against one of 'x'. *)
  let words content =
    let body = multipart_body [ (cd "f", content) ] in
    let count () =
      Multipart.fold
        ~limits:{ Multipart.default_limits with max_part_size = 2_000_000 }
        (Handler.request_for_test ~meth:POST ~headers:ct ~body "/") ~init:0
        (fun n -> function
        | Data d -> n + String.length d
        | _ -> n)
    in
    let before = Gc.minor_words () in
    (match count () with
    | Ok n -> check_int "all the content" (String.length content) n
    | Error _ -> Alcotest.fail "refused");
    Gc.minor_words () -. before
  in
  let plain = words (String.make 1_000_000 'x')
  and crs = words (String.make 1_000_000 '\r') in
  Alcotest.(check bool)
    (Printf.sprintf "CRs allocate as plain bytes do (%.0f and %.0f words)" crs
       plain)
    true
    (crs < (plain *. 2.) +. 1000.)

let multipart () =
  let post ?(ct = "multipart/form-data; boundary=XyZ") ?(target = "/upload")
      body =
    Testing.call ~meth:POST
      ~headers:[ ("Content-Type", ct) ]
      ~body upload_app target
  in
  let big = String.make 35_000 'x' in
  let body =
    "preamble\r\n"
    ^ multipart_body
        [
          ({|Content-Disposition: form-data; name="title"|}, "Hello\r\n--Xy");
          ( {|Content-Disposition: form-data; name="doc"; filename="a \"b\".txt"|}
            ^ "\r\nContent-Type: text/plain",
            big );
        ]
    ^ "epilogue"
  in
  let r = post body in
  check_int "200" 200 r.status;
  check_string "events"
    "part title\n\
     data 11\n\
     end\n\
     part doc file a \"b\".txt text/plain\n\
     data 35000\n\
     end"
    r.body;
  let r =
    post ~target:"/form" ~ct:{|multipart/form-data; boundary="XyZ"|}
      (multipart_body
         [
           ({|Content-Disposition: form-data; name="a"|}, "1");
           ({|Content-Disposition: form-data; name="b"|}, "");
         ])
  in
  check_string "whole parts, quoted boundary" "a=1;b=" r.body;
  let status name expected body = check_int name expected (post body).status in
  let cd n = Printf.sprintf {|Content-Disposition: form-data; name="%s"|} n in
  status "oversized part: 413" 413
    (multipart_body [ (cd "f", String.make 40_001 'x') ]);
  status "too many parts: 413" 413
    (multipart_body [ (cd "a", ""); (cd "b", ""); (cd "c", ""); (cd "d", "") ]);
  status "part header too large: 431" 431
    (multipart_body [ (cd "a" ^ "\r\nX-Pad: " ^ String.make 300 'p', "") ]);
  let whole = multipart_body [ (cd "a", "content") ] in
  status "truncated in the content: 400" 400 (String.sub whole 0 60);
  status "truncated before the closing boundary: 400" 400
    (String.sub whole 0 (String.length whole - 8));
  status "truncated in the head: 400" 400 (String.sub whole 0 20);
  status "no boundary at all: 400" 400 "just text";
  status "no Content-Disposition: 400" 400
    (multipart_body [ ("Content-Type: text/plain", "x") ]);
  status "no name: 400" 400
    (multipart_body [ ("Content-Disposition: form-data", "x") ]);
  status "malformed field: 400" 400
    (multipart_body [ (cd "a" ^ "\r\nno colon", "x") ]);
  check_int "no boundary parameter: 415" 415
    (post ~ct:"multipart/form-data" whole).status;
  check_int "not multipart: 415" 415 (post ~ct:"text/plain" whole).status;
  (* The body limit still holds. *)
  let r =
    Testing.call ~meth:POST
      ~config:
        {
          Config.default with
          limits = { Config.default.limits with max_body = 1000 };
        }
      ~headers:[ ("Content-Type", "multipart/form-data; boundary=XyZ") ]
      ~body:(multipart_body [ (cd "f", String.make 2000 'x') ])
      upload_app "/upload"
  in
  check_int "above the body limit: 413" 413 r.status

(* {1 Body limits per route} *)

(* A route's [max_body] replaces the server's, higher as well as lower: a
   10 MiB route on a 1 MiB server takes 2 MB, by Content-Length and chunked;
   a 1 MiB route and a route without a limit still refuse more than 1 MiB,
   saying the limit. *)
let route_body_limits () =
  let mib = 1024 * 1024 in
  let length r =
    match Handler.body_string r with
    | Ok b -> Response.string (string_of_int (String.length b))
    | Error e -> Response.error e.status e.reason
  in
  let app =
    Router.empty
    |> Router.add ~max_body:(10 * mib) POST "/upload" length
    |> Router.add ~max_body:mib POST "/small" length
    |> Router.add POST "/plain" length
  in
  let config =
    {
      Config.default with
      limits = { Config.default.limits with max_body = mib };
    }
  in
  let chunked body =
    (* 64 KiB chunks. *)
    let b = Buffer.create (String.length body + 4096) in
    let rec go off =
      let n = min 65536 (String.length body - off) in
      Printf.bprintf b "%x\r\n%s\r\n" n (String.sub body off n);
      if n > 0 then go (off + n)
    in
    go 0;
    Buffer.contents b
  in
  let post ?(chunk = false) target body =
    if chunk then
      Testing.call ~config ~meth:POST
        ~headers:[ ("Transfer-Encoding", "chunked") ]
        ~body:(chunked body) app target
    else Testing.call ~config ~meth:POST ~body app target
  in
  let two_mb = String.make 2_000_000 'b' in
  let r = post "/upload" two_mb in
  check_int "raised limit, Content-Length: 200" 200 r.status;
  check_string "whole body" "2000000" r.body;
  let r = post ~chunk:true "/upload" two_mb in
  check_int "raised limit, chunked: 200" 200 r.status;
  check_string "whole chunked body" "2000000" r.body;
  let over = String.make (mib + 1) 'o' in
  (* The 413 names the limit and where it comes from, so that the developer
     knows which setting to raise. *)
  List.iter
    (fun (target, source) ->
      let says = "body too large: limit 1048576 bytes (" ^ source ^ ")" in
      let r = post target over in
      check_int (target ^ " above 1 MiB: 413") 413 r.status;
      Alcotest.(check bool)
        (target ^ ": the 413 names the limit and its source")
        true (contains r.body says);
      let r = post ~chunk:true target over in
      check_int (target ^ " chunked above 1 MiB: 413") 413 r.status;
      Alcotest.(check bool)
        (target ^ ": chunked, the 413 names the limit and its source")
        true (contains r.body says))
    [
      ("/small", "the route's max_body");
      ("/plain", "the server's limit: --max-body, MaxBodySize");
    ];
  check_int "within 1 MiB: 200" 200 (post "/plain" (String.make mib 'i')).status;
  (* Above every route's limit: refused by the parser, unread. *)
  let r =
    Testing.call ~config ~meth:POST
      ~headers:[ ("Content-Length", string_of_int ((10 * mib) + 1)) ]
      app "/upload"
  in
  check_int "above the largest route limit: 413" 413 r.status;
  Alcotest.(check bool)
    "names the largest limit" true
    (contains r.body
       "body too large: limit 10485760 bytes (the largest route max_body)");
  (* No route above the server's limit: the parser's limit is the server's. *)
  let r =
    Testing.call ~config ~meth:POST
      ~headers:[ ("Content-Length", string_of_int (mib + 1)) ]
      (Router.empty |> Router.add POST "/plain" length)
      "/plain"
  in
  check_int "above the server's limit, no route limit: 413" 413 r.status;
  Alcotest.(check bool)
    "names the server's limit" true
    (contains r.body
       "body too large: limit 1048576 bytes (the server's limit: --max-body, \
        MaxBodySize)")

(* {1 Middleware, error pages, static files} *)

let tag name : Router.middleware =
 fun next r -> Response.with_header "X-Seen" name (next r)

(* The pitfall: middleware used to wrap routes only, and never saw the
   server's own answers or static files. *)
let middleware_sees_everything () =
  let app =
    Router.(
      empty
      |> use (tag "outer")
      |> use (tag "inner")
      |> get "/hi" (fun _ -> Response.string "hi")
      |> add ~max_body:4 POST "/small" (fun _ -> Response.string "x"))
  in
  let seen ?meth ?headers ?body target =
    let r =
      Testing.call ~config ~memory:(files ()) ?meth ?headers ?body app target
    in
    (r.status, Testing.headers r "x-seen")
  in
  let both = [ "inner"; "outer" ] in
  let check name expected actual =
    Alcotest.(check (pair int (list string))) name expected actual
  in
  check "route" (200, both) (seen "/hi");
  check "static file" (200, both) (seen "/a.txt");
  check "404" (404, both) (seen "/missing");
  check "405" (405, both) (seen ~meth:DELETE "/hi");
  check "400 (above the root)" (400, both) (seen "/../x");
  check "413 (above the route's limit)" (413, both)
    (seen ~meth:POST ~body:"123456789" "/small")

(* The pitfall: a handler that raised was answered outside the middleware,
   so the security headers it adds were missing from 500 pages. The error
   page and the log event stay. *)
let middleware_sees_a_handlers_500 () =
  let app =
    Router.(
      empty
      |> use (tag "outer")
      |> use (tag "inner")
      |> get "/boom" (fun _ -> failwith "boom")
      |> scope "/api" (empty |> get "/boom" (fun _ -> failwith "api boom"))
      |> on_error (fun _ r ->
             if r.status = 500 then Response.string ~status:500 "sorry" else r))
  in
  List.iter
    (fun target ->
      let memory = files () in
      let r = Testing.call ~config ~memory app target in
      check_int (target ^ ": 500") 500 r.status;
      Alcotest.(check (list string))
        (target ^ ": the middleware saw it")
        [ "inner"; "outer" ]
        (Testing.headers r "x-seen");
      check_string (target ^ ": the error page") "sorry" r.body;
      Alcotest.(check bool)
        (target ^ ": Handler_failed logged")
        true
        (List.exists
           (function Log_event.Handler_failed _ -> true | _ -> false)
           (In_memory.events memory)))
    [ "/boom"; "/api/boom" ]

let not_found_page : Router.error_page =
 fun _req r ->
  if r.status = 404 then Response.html ~status:404 "<h1>Nothing here</h1>"
  else r

(* The pitfall: a catch-all route was the only way to a custom 404 page, and
   it turned static files off. *)
let error_page_keeps_static_files () =
  let app =
    Router.(
      empty
      |> get "/boom" (fun _ -> failwith "boom")
      |> get "/own" (fun _ -> Response.error 404 "the handler's own")
      |> on_error not_found_page
      |> on_error (fun req r ->
             let r = not_found_page req r in
             if r.status = 500 then Response.string ~status:500 "sorry" else r))
  in
  let call ?meth t = Testing.call ?meth ~config ~memory:(files ()) app t in
  check_string "static file still served" "0123456789" (call "/a.txt").body;
  let r = call "/missing" in
  check_int "404" 404 r.status;
  check_string "custom page" "<h1>Nothing here</h1>" r.body;
  check_string "handler failure" "sorry" (call "/boom").body;
  check_string "a route's own 404 is left alone"
    "404 Not Found: the handler's own\n" (call "/own").body;
  let r = call ~meth:POST "/a.txt" in
  check_opt "405 keeps Allow" (Some "GET, HEAD") (Testing.header r "allow");
  (* A request the parser refuses has no request, and gets the page too. *)
  let r =
    Testing.call ~config
      ~headers:[ ("Bad Field", "x") ]
      Router.(empty |> on_error (fun _ _ -> Response.string ~status:400 "bad!"))
      "/"
  in
  check_int "parser's 400" 400 r.status;
  check_string "its page" "bad!" r.body

let static_route () =
  let app =
    Router.(
      empty
      |> get "/api/ping" (fun _ -> Response.string "pong")
      |> get "/assets/*path" (Static.handler ~root:"/srv/www" ())
      |> on_error not_found_page)
  in
  (* No document root: files come from the route only. *)
  let call ?(headers = []) t = Testing.call ~headers ~memory:(files ()) app t in
  let r = call "/assets/a.txt" in
  check_int "200" 200 r.status;
  check_string "content" "0123456789" r.body;
  let etag = Option.get (Testing.header r "etag") in
  check_opt "Last-Modified" (Some "Sun, 09 Sep 2001 00:46:40 GMT")
    (Testing.header r "last-modified");
  check_int "If-None-Match: 304" 304
    (call ~headers:[ ("If-None-Match", etag) ] "/assets/a.txt").status;
  check_int "If-Modified-Since: 304" 304
    (call
       ~headers:[ ("If-Modified-Since", "Sun, 09 Sep 2001 00:46:40 GMT") ]
       "/assets/a.txt")
      .status;
  let r = call ~headers:[ ("Range", "bytes=2-4") ] "/assets/a.txt" in
  check_int "Range: 206" 206 r.status;
  check_string "the range" "234" r.body;
  let r =
    call
      ~headers:[ ("Range", "bytes=2-4"); ("If-Range", "\"other\"") ]
      "/assets/a.txt"
  in
  check_int "If-Range not matching: 200" 200 r.status;
  let r = call "/assets/docs" in
  check_int "directory: 301" 301 r.status;
  check_opt "under the prefix" (Some "/assets/docs/")
    (Testing.header r "location");
  check_string "index" "docs" (call "/assets/docs/").body;
  check_int "climbing: 400" 400 (call "/assets/%2e%2e/%2e%2e/etc/passwd").status;
  check_int "encoded slash: 400" 400 (call "/assets/docs%2Findex.html").status;
  let r = call "/assets/nope" in
  check_string "its 404 is the page" "<h1>Nothing here</h1>" r.body;
  check_string "routes beside it" "pong" (call "/api/ping").body;
  (* As a catch-all, beside API routes. *)
  let app =
    Router.(
      empty
      |> get "/api/ping" (fun _ -> Response.string "pong")
      |> get "/*path" (Static.handler ~root:"/srv/www" ()))
  in
  let call t = Testing.call ~memory:(files ()) app t in
  check_string "catch-all static" "0123456789" (call "/a.txt").body;
  check_string "api" "pong" (call "/api/ping").body

(* One file the application chose, after its own check: the static files'
   machinery, no root, no listing. There was no way but a hand-made
   [Static.handler] call with a made-up [tail]. *)
let static_file () =
  let m = files () in
  In_memory.add_file m ~mtime:(now -. 3600.) "/data/files/7" "attachment!";
  In_memory.add_file m "/data/files/report.pdf" "%PDF";
  In_memory.add_directory m "/data/files/dir";
  In_memory.add_file m "/data/files/dir/index.html" "index";
  In_memory.add_symlink m "/data/files/link" ~target:"/data/files/7";
  (* The application's records: attachment id to file, for user "ada". *)
  let records =
    [
      ("7", "/data/files/7");
      ("pdf", "/data/files/report.pdf");
      ("dir", "/data/files/dir");
      ("gone", "/data/files/missing");
      ("link", "/data/files/link");
    ]
  in
  let app =
    Router.(
      empty
      |> get "/attachments/:id" (fun r ->
             match
               (Handler.header r "x-user", Handler.param r "id" |> Option.get)
             with
             | Some "ada", id when List.mem_assoc id records ->
                 Static.file r (List.assoc id records)
             | _ -> Response.error 403 "not yours")
      |> on_error (fun _ r ->
             if r.status = 404 then Response.string ~status:404 "no such file"
             else r))
  in
  let call ?(headers = []) ?meth target =
    Testing.call ~memory:m ?meth
      ~headers:(("X-User", "ada") :: headers)
      app target
  in
  let r = call "/attachments/7" in
  check_int "200" 200 r.status;
  check_string "the file" "attachment!" r.body;
  check_opt "type from the name" (Some "application/octet-stream")
    (Testing.header r "content-type");
  check_opt "ranges" (Some "bytes") (Testing.header r "accept-ranges");
  let etag = Option.get (Testing.header r "etag") in
  Alcotest.(check bool)
    "Last-Modified" true
    (Option.is_some (Testing.header r "last-modified"));
  check_opt "type of a .pdf" (Some "application/pdf")
    (Testing.header (call "/attachments/pdf") "content-type");
  check_int "If-None-Match: 304" 304
    (call ~headers:[ ("If-None-Match", etag) ] "/attachments/7").status;
  check_int "If-Match fails: 412" 412
    (call ~headers:[ ("If-Match", "\"other\"") ] "/attachments/7").status;
  let r = call ~headers:[ ("Range", "bytes=0-5") ] "/attachments/7" in
  check_int "Range: 206" 206 r.status;
  check_string "the range" "attach" r.body;
  check_opt "Content-Range" (Some "bytes 0-5/11")
    (Testing.header r "content-range");
  check_int "unsatisfiable range: 416" 416
    (call ~headers:[ ("Range", "bytes=50-") ] "/attachments/7").status;
  check_string "HEAD" "" (call ~meth:HEAD "/attachments/7").body;
  check_string "a link is followed" "attachment!"
    (call "/attachments/link").body;
  let r = call "/attachments/gone" in
  check_int "missing: 404" 404 r.status;
  check_string "through the error page" "no such file" r.body;
  let r = call "/attachments/dir" in
  check_int "a directory: 404, never its index or a redirect" 404 r.status;
  check_string "a directory: the error page" "no such file" r.body;
  check_int "the application's own check" 403
    (Testing.call ~memory:m app "/attachments/7").status

(* A [tail] a handler made up, not the end of the request's path: it was an
   [Invalid_argument] from [String.sub] (a 500) when longer than the path,
   and a wrong redirect otherwise. Now its file is served; a directory,
   whose URL is not known, is a 404. *)
let static_made_up_tail () =
  let files_of tail : Handler.t =
   fun r -> Static.handler ~root:"/srv/www" () { r with tail = Some tail }
  in
  let app =
    Router.(
      empty
      |> get "/f" (files_of "/a.txt")
      |> get "/d" (files_of "/docs")
      |> get "/i" (files_of "/docs/")
      |> get "/suffix/a.txt" (files_of "/a.txt")
      |> get "/bad" (files_of "a.txt"))
  in
  let call t = Testing.call ~memory:(files ()) app t in
  let r = call "/f" in
  check_int "longer than the path: served" 200 r.status;
  check_string "the file" "0123456789" r.body;
  check_int "a directory: 404, no redirect" 404 (call "/d").status;
  check_string "a directory's index" "docs" (call "/i").body;
  check_string "a real suffix: as before" "0123456789"
    (call "/suffix/a.txt").body;
  check_int "no leading slash: 400" 400 (call "/bad").status

let scopes () =
  let api =
    Router.(
      empty
      |> use (tag "api")
      |> get "/users/:id" (fun r ->
             Response.string (Option.get (Handler.param r "id"))))
  in
  let app =
    Router.(
      empty
      |> use (tag "global")
      |> scope ~middleware:[ tag "scope" ] "/api/v1/" api
      |> get "/users/:id" (fun _ -> Response.string "not the api"))
  in
  let r = Testing.call app "/api/v1/users/42" in
  check_string "param" "42" r.body;
  Alcotest.(check (list string))
    "innermost first"
    [ "api"; "scope"; "global" ]
    (Testing.headers r "x-seen");
  let r = Testing.call app "/users/42" in
  check_string "outside the scope" "not the api" r.body;
  Alcotest.(check (list string))
    "global only" [ "global" ]
    (Testing.headers r "x-seen")

let testing_helper () =
  let app =
    Router.(
      empty
      |> post "/rev" (fun r ->
             match Handler.body_string r with
             | Ok b ->
                 Response.string
                   (String.init (String.length b) (fun i ->
                        b.[String.length b - 1 - i]))
             | Error e -> Handler.bad_request e)
      |> get "/stream" (fun _ ->
             Response.stream (fun w ->
                 Response.Writer.write w "a";
                 Response.Writer.write w "bc")))
  in
  check_string "body" "olleh"
    (Testing.call ~meth:POST ~body:"hello" app "/rev").body;
  let r = Testing.call app "/stream" in
  check_string "de-chunked" "abc" r.body;
  check_string "HEAD" "" (Testing.call ~meth:HEAD app "/stream").body;
  let m = In_memory.create () in
  ignore (Testing.call ~memory:m app "/nothing");
  Alcotest.(check bool)
    "access logged" true
    (List.exists
       (function Log.Access _ -> true | _ -> false)
       (In_memory.events m))

(* What testing.mli says of an upgrade: the 101, and as its body the raw
   bytes the upgraded protocol wrote (here one WebSocket text frame, then the
   close frame, 1000, sent when [f] returned). It used to say [Failure]. *)
let testing_upgrade () =
  let app =
    Router.(
      empty
      |> get "/ws" (fun r ->
             Websocket.accept r (fun ws -> Websocket.send_text ws "hi")))
  in
  let r =
    Testing.call
      ~headers:
        [
          ("Upgrade", "websocket");
          ("Connection", "Upgrade");
          ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
          ("Sec-WebSocket-Version", "13");
        ]
      app "/ws"
  in
  check_int "101" 101 r.status;
  check_opt "accept" (Some "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    (Testing.header r "sec-websocket-accept");
  check_string "the body: the raw frames" "\x81\x02hi\x88\x02\x03\xe8" r.body

let () =
  Alcotest.run "web applications"
    [
      ("responses", [ Alcotest.test_case "header order" `Quick header_order ]);
      ( "query and forms",
        [
          Alcotest.test_case "decode" `Quick query_decode;
          Alcotest.test_case "query in a route" `Quick query_route;
          Alcotest.test_case "urlencoded form" `Quick form_route;
        ] );
      ( "cookies",
        [
          Alcotest.test_case "parse" `Quick cookie_parse;
          Alcotest.test_case "in a route" `Quick cookie_route;
          Alcotest.test_case "Set-Cookie" `Quick set_cookie;
        ] );
      ("json", [ Alcotest.test_case "body and response" `Quick json ]);
      ( "multipart",
        [
          Alcotest.test_case "streamed, limits" `Quick multipart;
          Alcotest.test_case "CR-heavy parts" `Quick multipart_cr_heavy;
        ] );
      ( "body limits",
        [
          Alcotest.test_case "per route, higher or lower" `Quick
            route_body_limits;
        ] );
      ( "application",
        [
          Alcotest.test_case "middleware sees every response" `Quick
            middleware_sees_everything;
          Alcotest.test_case "middleware sees a handler's 500" `Quick
            middleware_sees_a_handlers_500;
          Alcotest.test_case "error page keeps static files" `Quick
            error_page_keeps_static_files;
          Alcotest.test_case "static files as a route" `Quick static_route;
          Alcotest.test_case "Static.file" `Quick static_file;
          Alcotest.test_case "Static.handler, a made-up tail" `Quick
            static_made_up_tail;
          Alcotest.test_case "scopes" `Quick scopes;
          Alcotest.test_case "Testing.call" `Quick testing_helper;
          Alcotest.test_case "Testing.call, an upgrade" `Quick testing_upgrade;
        ] );
    ]
