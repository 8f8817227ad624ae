(* Unit tests: responses, the head cache, routing, static files on an
   in-memory and on the real file system, log format, output buffer.
   braid_http's protocol values are tested in test/http/test_protocol.ml. *)

open Braid_http
open Braid_server
open Braid_web
module Head_cache = Braid_web.Private.Head_cache
module Static = Braid_web.Static
module Output = Braid_server.Private.Output

(* {1 Responses that cannot be built wrong} *)

let refused name f =
  match f () with
  | (_ : Response.t) -> Alcotest.failf "%s: built" name
  | exception Invalid_argument _ -> ()

let response_construction () =
  List.iter
    (fun status ->
      refused (Printf.sprintf "status %d" status) (fun () ->
          Response.empty status);
      refused (Printf.sprintf "status %d through string" status) (fun () ->
          Response.string ~status "x");
      refused (Printf.sprintf "error %d" status) (fun () ->
          Response.error status "x"))
    [ 42; 99; 600; 1000; -1 ];
  List.iter
    (fun name ->
      refused (Printf.sprintf "name %S" name) (fun () ->
          Response.make ~headers:[ (name, "v") ] 200 Empty);
      refused (Printf.sprintf "with_header name %S" name) (fun () ->
          Response.with_header name "v" (Response.empty 200)))
    [ ""; "Bad Name"; "Bad Name:"; "a:b"; "x\r\ny"; "caf\xc3\xa9"; "(x)" ];
  List.iter
    (fun value ->
      refused (Printf.sprintf "value %S" value) (fun () ->
          Response.string ~headers:[ ("X-A", value) ] "x");
      refused (Printf.sprintf "content type %S" value) (fun () ->
          Response.string ~content_type:value "x");
      refused (Printf.sprintf "redirect to %S" value) (fun () ->
          Response.redirect value))
    [
      "/\r\nSet-Cookie: session=attacker";
      "/ok\n";
      "/ok\r";
      "a\000b";
      "bell\007";
      "del\127";
    ];
  (* What is allowed. *)
  List.iter
    (fun status -> ignore (Response.empty status))
    [ 100; 200; 404; 599 ];
  let r =
    Response.string
      ~headers:
        [
          ("X-Tab", "a\tb");
          ("X-Utf8", "caf\xc3\xa9");
          ("X-Blanks", " padded ");
          ("!#$%&'*+-.^_`|~09azAZ", "token characters");
          ("X-Empty", "");
        ]
      "x"
  in
  Alcotest.(check (option string))
    "obs-text kept" (Some "caf\xc3\xa9")
    (Response.header r "x-utf8");
  Alcotest.(check int)
    "a redirect" 302 (Response.redirect ~status:302 "/a?b=c").status

(* The type of the last name asked is remembered; another name is looked
   up. *)
let content_type_memo () =
  let c = Head_cache.create () and asked = ref 0 in
  let lookup name =
    incr asked;
    Static.content_type name
  in
  let ty name = Head_cache.content_type c name ~lookup in
  Alcotest.(check string) "text" "text/plain" (ty "/www/a.txt");
  Alcotest.(check string) "again" "text/plain" (ty "/www/a.txt");
  Alcotest.(check int) "looked up once" 1 !asked;
  Alcotest.(check string) "another name" "text/css" (ty "/www/style.css");
  Alcotest.(check string) "back" "text/plain" (ty "/www/a.txt");
  Alcotest.(check int) "each change looked up" 3 !asked

let date_cache () =
  let mono = ref 0 and asked = ref 0 and wall = ref 1000.2 in
  let c = Head_cache.create () in
  let services =
    {
      (In_memory.services (In_memory.create ())) with
      now =
        (fun () ->
          incr asked;
          !wall);
      monotonic_ns = (fun () -> !mono);
    }
  in
  let now () = Head_cache.now c services in
  Alcotest.(check (float 0.)) "first read asks the clock" 1000.2 (now ());
  mono := 500_000_000;
  wall := 5000.;
  Alcotest.(check (float 1e-9)) "within a second: extrapolated" 1000.7 (now ());
  Alcotest.(check int) "asked once" 1 !asked;
  mono := 1_000_000_000;
  Alcotest.(check (float 0.)) "a second later: asked again" 5000. (now ());
  Alcotest.(check int) "asked twice" 2 !asked;
  mono := 0;
  ignore (now ());
  Alcotest.(check int) "a monotonic clock going back asks again" 3 !asked;
  let a = Head_cache.header_line c 1000.2 in
  Alcotest.(check string) "line" "Date: Thu, 01 Jan 1970 00:16:40 GMT\r\n" a;
  Alcotest.(check bool)
    "same second: the cached string" true
    (Head_cache.header_line c 1000.9 == a);
  Alcotest.(check string)
    "next second" "Date: Thu, 01 Jan 1970 00:16:41 GMT\r\n"
    (Head_cache.header_line c 1001.0)

(* {1 Routing} *)

let named name : Handler.t = fun _ -> Response.string name

let found_name router meth path =
  match Router.lookup router meth path with
  | Found { handler; params; _ } ->
      let r = handler (Handler.request_for_test "/") in
      let body = match r.body with String s -> s | _ -> "?" in
      `Found (body, params)
  | Method_not_allowed ms -> `Not_allowed (Router.allow ms)
  | Not_found -> `Not_found

let routing () =
  let router =
    Router.empty
    |> Router.add GET "/" (named "root")
    |> Router.add GET "/fib/:n" (named "fib")
    |> Router.add POST "/fib/:n" (named "fib-post")
    |> Router.add GET "/a/:x/b/:y" (named "two")
    |> Router.add GET "/files/*rest" (named "files")
    |> Router.add PUT "/only-put" (named "put")
    |> Router.add HEAD "/head" (named "head")
    |> Router.add GET "/head" (named "get")
  in
  let check name expected got =
    Alcotest.(check bool) name true (expected = got)
  in
  check "root" (`Found ("root", [])) (found_name router GET "/");
  check "param"
    (`Found ("fib", [ ("n", "10") ]))
    (found_name router GET "/fib/10");
  check "decoded param"
    (`Found ("fib", [ ("n", "a/b c") ]))
    (found_name router GET "/fib/a%2Fb%20c");
  check "method"
    (`Found ("fib-post", [ ("n", "1") ]))
    (found_name router POST "/fib/1");
  check "two params"
    (`Found ("two", [ ("x", "1"); ("y", "2") ]))
    (found_name router GET "/a/1/b/2");
  check "rest"
    (`Found ("files", [ ("rest", "x/y/z") ]))
    (found_name router GET "/files/x/y/z");
  check "empty rest"
    (`Found ("files", [ ("rest", "") ]))
    (found_name router GET "/files/");
  check "HEAD via GET"
    (`Found ("fib", [ ("n", "3") ]))
    (found_name router HEAD "/fib/3");
  check "HEAD route first"
    (`Found ("head", []))
    (found_name router HEAD "/head");
  check "empty param" `Not_found (found_name router GET "/fib/");
  check "too long" `Not_found (found_name router GET "/fib/1/2");
  check "unknown" `Not_found (found_name router GET "/nope");
  check "bad escape" `Not_found (found_name router GET "/fib/%zz");
  check "405" (`Not_allowed "GET, HEAD, POST")
    (found_name router DELETE "/fib/1");
  check "405 without GET" (`Not_allowed "PUT")
    (found_name router GET "/only-put");
  check "empty router" `Not_found (found_name Router.empty GET "/");
  List.iter
    (fun p ->
      match Router.add GET p (named "x") Router.empty with
      | _ -> Alcotest.failf "pattern %S accepted" p
      | exception Invalid_argument _ -> ())
    [ ""; "fib"; "/fib/:"; "/*rest/x"; "/%zz" ]

(* Routes that all begin with a literal: a path whose first segment is none
   of them is answered without being split (Router.lookup), and must be
   answered as if it had been. *)
let routing_literal_heads () =
  let router =
    Router.empty
    |> Router.add GET "/debug/gc" (named "gc")
    |> Router.add GET "/docs/:page" (named "docs")
    |> Router.add POST "/a%20b" (named "space")
  in
  let check name expected got =
    Alcotest.(check bool) name true (expected = got)
  in
  check "other file" `Not_found (found_name router GET "/1k.txt");
  check "literal" (`Found ("gc", [])) (found_name router GET "/debug/gc");
  check "escaped literal"
    (`Found ("gc", []))
    (found_name router GET "/%64ebug/gc");
  check "first only" `Not_found (found_name router GET "/debug");
  check "longer first" `Not_found (found_name router GET "/debugx/gc");
  check "shorter first" `Not_found (found_name router GET "/debu/gc");
  check "param after"
    (`Found ("docs", [ ("page", "x") ]))
    (found_name router GET "/docs/x");
  check "decoded literal"
    (`Found ("space", []))
    (found_name router POST "/a%20b");
  check "405" (`Not_allowed "POST") (found_name router GET "/a%20b");
  check "405 plain" (`Not_allowed "GET, HEAD")
    (found_name router DELETE "/debug/gc");
  check "escape past the first segment"
    (`Found ("docs", [ ("page", "x") ]))
    (found_name router GET "/docs/%78");
  check "escape past an unknown first segment" `Not_found
    (found_name router GET "/other/%78");
  check "root" `Not_found (found_name router GET "/");
  check "not absolute" `Not_found (found_name router GET "debug/gc")

(* {1 Static files} *)

let request ?(meth = Method.GET) ?(headers = []) target =
  (Handler.request_for_test ~meth ~headers target).head

let serve ?meth ?headers ?(root = "/www") ?precompressed services target =
  let req = request ?meth ?headers target in
  let path, query = Url_path.split_target target in
  Static.serve services ~root ~index:"index.html" ?precompressed
    ~dates:(Head_cache.create ()) req ~path ~query

let mtime = 1_000_000_000.

let mem_site () =
  let mem = In_memory.create ~now:(mtime +. 100.) () in
  In_memory.add_file mem ~mtime "/www/index.html" "home";
  In_memory.add_file mem ~mtime "/www/a.txt" "0123456789";
  In_memory.add_file mem ~mtime "/www/style.css" "p{}";
  In_memory.add_file mem ~mtime "/www/sub/page.html" "page";
  In_memory.add_directory mem "/www/empty";
  In_memory.add_file mem "/secret.txt" "secret";
  In_memory.add_file mem "/www-evil/x.txt" "sibling";
  In_memory.add_symlink mem "/www/inside" ~target:"a.txt";
  In_memory.add_symlink mem "/www/inside-dir" ~target:"/www/sub";
  In_memory.add_symlink mem "/www/outside" ~target:"/secret.txt";
  In_memory.add_symlink mem "/www/outside-rel" ~target:"../secret.txt";
  In_memory.add_symlink mem "/www/outside-dir" ~target:"/";
  In_memory.add_symlink mem "/www/sibling" ~target:"/www-evil";
  In_memory.add_symlink mem "/www/loop" ~target:"loop";
  In_memory.add_symlink mem "/www/sub/index.html" ~target:"/secret.txt";
  mem

let body (r : Response.t) =
  match r.body with
  | Empty -> ""
  | String s -> s
  | File { path; offset; length; _ } ->
      Printf.sprintf "file %s %d+%d" path offset length
  | Stream _ -> "stream"
  | Upgrade { protocol; _ } -> "upgrade to " ^ protocol

let check_status name expected (r : Response.t) =
  Alcotest.(check int) name expected r.status

let static_files () =
  let caps = In_memory.services (mem_site ()) in
  let r = serve caps "/a.txt" in
  check_status "file" 200 r;
  Alcotest.(check string) "whole file" "file /www/a.txt 0+10" (body r);
  Alcotest.(check (option string))
    "type" (Some "text/plain")
    (Response.header r "content-type");
  Alcotest.(check (option string))
    "css" (Some "text/css")
    (Response.header (serve caps "/style.css") "content-type");
  Alcotest.(check (option string))
    "last modified" (Some "Sun, 09 Sep 2001 01:46:40 GMT")
    (Response.header r "last-modified");
  Alcotest.(check (option string))
    "ranges" (Some "bytes")
    (Response.header r "accept-ranges");
  check_status "missing" 404 (serve caps "/nope.txt");
  check_status "file as a directory" 404 (serve caps "/a.txt/x");
  check_status "root index" 200 (serve caps "/");
  Alcotest.(check string)
    "index" "file /www/index.html 0+4"
    (body (serve caps "/"));
  let r = serve caps "/sub?x=1" in
  check_status "directory without slash" 301 r;
  Alcotest.(check (option string))
    "keeps the query" (Some "/sub/?x=1")
    (Response.header r "location");
  check_status "directory without index" 403 (serve caps "/empty/");
  check_status "POST" 405 (serve ~meth:POST caps "/a.txt");
  Alcotest.(check (option string))
    "Allow" (Some "GET, HEAD")
    (Response.header (serve ~meth:POST caps "/a.txt") "allow");
  check_status "HEAD" 200 (serve ~meth:HEAD caps "/a.txt")

let escapes () =
  let caps = In_memory.services (mem_site ()) in
  let refused name status target =
    let r = serve caps target in
    check_status name status r;
    if String.length (body r) > 5 && String.sub (body r) 0 5 = "file " then
      Alcotest.failf "%s serves %s" name (body r)
  in
  refused ".." 400 "/../secret.txt";
  refused "deep .." 400 "/sub/../../secret.txt";
  refused "%2e%2e" 400 "/%2e%2e/secret.txt";
  refused "%2E%2E" 400 "/%2E%2E/secret.txt";
  refused "mixed" 400 "/.%2E/secret.txt";
  refused "encoded slash" 400 "/..%2Fsecret.txt";
  refused "encoded slash inside" 400 "/sub%2Fpage.html";
  refused "NUL" 400 "/a.txt%00.html";
  refused "bad escape" 400 "/a%zz";
  refused "link to a file outside" 403 "/outside";
  refused "relative link outside" 403 "/outside-rel";
  refused "link to a directory outside" 403 "/outside-dir/secret.txt";
  refused "link to a sibling with the root as prefix" 403 "/sibling/x.txt";
  refused "index linking outside" 403 "/sub/";
  refused "link loop" 404 "/loop";
  check_status "a link inside the root" 200 (serve caps "/inside");
  check_status "a directory link inside the root" 200
    (serve caps "/inside-dir/page.html");
  check_status "dot-segments inside the root" 200 (serve caps "/sub/../a.txt")

let conditional () =
  let caps = In_memory.services (mem_site ()) in
  let get headers = serve ~headers caps "/a.txt" in
  let ims v = get [ ("If-Modified-Since", v) ] in
  let r = ims "Sun, 09 Sep 2001 01:46:40 GMT" in
  check_status "same date" 304 r;
  Alcotest.(check string) "304 has no body" "" (body r);
  Alcotest.(check bool)
    "304 keeps Last-Modified" true
    (Response.header r "last-modified" <> None);
  check_status "later" 304 (ims "Mon, 10 Sep 2001 00:00:00 GMT");
  check_status "older" 200 (ims "Sun, 09 Sep 2001 01:46:39 GMT");
  check_status "asctime" 304 (ims "Sun Sep  9 01:46:40 2001");
  check_status "invalid date" 200 (ims "tomorrow");
  check_status "If-None-Match: *" 304 (get [ ("If-None-Match", "*") ]);
  check_status "If-None-Match wins over If-Modified-Since" 200
    (get
       [
         ("If-None-Match", "\"x\"");
         ("If-Modified-Since", "Mon, 10 Sep 2001 00:00:00 GMT");
       ])

(* RFC 9110 §13.1.3: "A recipient MUST ignore If-Modified-Since if the
   request contains an If-None-Match header field" and "if the received field
   value is not a valid HTTP-date, the field value has more than one member, or
   if the request method is neither GET nor HEAD". *)
let if_modified_since_ignored () =
  let caps = In_memory.services (mem_site ()) in
  let get headers = serve ~headers caps "/a.txt" in
  let later = "Mon, 10 Sep 2001 00:00:00 GMT" in
  check_status "one valid date" 304 (get [ ("If-Modified-Since", later) ]);
  check_status "two field lines: two members" 200
    (get [ ("If-Modified-Since", later); ("If-Modified-Since", later) ]);
  check_status "a list of two dates" 200
    (get [ ("If-Modified-Since", later ^ ", " ^ later) ]);
  check_status "not an HTTP-date" 200
    (get [ ("If-Modified-Since", "2001-09-10T00:00:00Z") ]);
  check_status "with If-None-Match" 200
    (get [ ("If-None-Match", "\"x\""); ("If-Modified-Since", later) ]);
  check_status "neither GET nor HEAD" 405
    (serve ~meth:POST ~headers:[ ("If-Modified-Since", later) ] caps "/a.txt")

(* RFC 9110 §13.1.1 and §13.1.4: an origin server MUST evaluate If-Match
   and If-Unmodified-Since; false, a GET gets 412 (§13.2.2), and If-Match
   wins. Only "*" or the file's own tag (strongly compared) holds. *)
let if_match_and_if_unmodified_since () =
  let caps = In_memory.services (mem_site ()) in
  let get headers = serve ~headers caps "/a.txt" in
  let earlier = "Sun, 09 Sep 2001 01:46:39 GMT"
  and same = "Sun, 09 Sep 2001 01:46:40 GMT" in
  check_status "If-Match: *" 200 (get [ ("If-Match", "*") ]);
  check_status "If-Match: an entity tag" 412 (get [ ("If-Match", "\"x\"") ]);
  check_status "If-Match: weak tags never match" 412
    (get [ ("If-Match", "W/\"x\"") ]);
  check_status "If-Unmodified-Since: the same date" 200
    (get [ ("If-Unmodified-Since", same) ]);
  check_status "If-Unmodified-Since: earlier" 412
    (get [ ("If-Unmodified-Since", earlier) ]);
  check_status "If-Unmodified-Since: not a date" 200
    (get [ ("If-Unmodified-Since", "yesterday") ]);
  check_status "If-Unmodified-Since: two members" 200
    (get [ ("If-Unmodified-Since", earlier); ("If-Unmodified-Since", earlier) ]);
  check_status "If-Match wins over If-Unmodified-Since" 200
    (get [ ("If-Match", "*"); ("If-Unmodified-Since", earlier) ]);
  check_status "412 before 304" 412
    (get [ ("If-Match", "\"x\""); ("If-None-Match", "*") ]);
  check_status "a missing file stays missing" 404
    (serve ~headers:[ ("If-Match", "\"x\"") ] caps "/nope.txt")

(* RFC 9110 §13.2.1: "A server MUST ignore all received preconditions if its
   response to the same request without those conditions ... would have been
   a status code other than a 2xx (Successful) or 412". *)
let preconditions_only_for_2xx () =
  let caps = In_memory.services (mem_site ()) in
  let conditional target =
    serve
      ~headers:
        [
          ("If-None-Match", "*");
          ("If-Modified-Since", "Mon, 10 Sep 2001 00:00:00 GMT");
        ]
      caps target
  in
  check_status "a redirect stays a redirect" 301 (conditional "/sub");
  check_status "missing stays missing" 404 (conditional "/nope.txt");
  check_status "forbidden stays forbidden" 403 (conditional "/empty/");
  check_status "a file is a 2xx: 304" 304 (conditional "/a.txt")

(* Entity tags (RFC 9110 §8.8.3, §13.1): the file's ETag is strong and
   stable; If-None-Match compares weakly (304), If-Match and If-Range
   strongly. *)
let entity_tags () =
  let caps = In_memory.services (mem_site ()) in
  let get headers = serve ~headers caps "/a.txt" in
  let etag =
    match Response.header (get []) "etag" with
    | Some e -> e
    | None -> Alcotest.fail "no ETag on a 200"
  in
  Alcotest.(check bool)
    "strong, quoted" true
    (String.length etag > 2 && etag.[0] = '"');
  Alcotest.(check (option string))
    "the same for the same file" (Some etag)
    (Response.header (get []) "etag");
  let weak = "W/" ^ etag in
  let r = get [ ("If-None-Match", etag) ] in
  check_status "If-None-Match: its tag" 304 r;
  Alcotest.(check (option string))
    "a 304 carries the ETag" (Some etag) (Response.header r "etag");
  check_status "If-None-Match: weak comparison" 304
    (get [ ("If-None-Match", weak) ]);
  check_status "If-None-Match: in a list" 304
    (get [ ("If-None-Match", "\"other\", " ^ etag) ]);
  check_status "If-None-Match: another tag" 200
    (get [ ("If-None-Match", "\"other\"") ]);
  check_status "If-None-Match: malformed, ignored" 200
    (get [ ("If-None-Match", "other") ]);
  check_status "If-Match: its tag" 200 (get [ ("If-Match", etag) ]);
  check_status "If-Match: strong comparison" 412 (get [ ("If-Match", weak) ]);
  check_status "If-Range: its tag" 206
    (get [ ("Range", "bytes=0-1"); ("If-Range", etag) ]);
  check_status "If-Range: a weak tag never" 200
    (get [ ("Range", "bytes=0-1"); ("If-Range", weak) ]);
  let changed =
    Entity_tag.to_string
      (Entity_tag.of_version ~inode:1 ~size:10 ~mtime:1_000_000_000.5)
  in
  Alcotest.(check bool)
    "another version, another tag" true
    (changed
    <> Entity_tag.to_string
         (Entity_tag.of_version ~inode:1 ~size:10 ~mtime:1_000_000_000.))

(* FILE.br, else FILE.gz, when accepted; never for Range; Vary always. *)
let precompressed () =
  let mem = mem_site () in
  In_memory.add_file mem ~mtime "/www/a.txt.gz" "gz";
  In_memory.add_file mem ~mtime "/www/a.txt.br" "brotli";
  In_memory.add_file mem ~mtime "/www/style.css.gz" "css.gz";
  In_memory.add_symlink mem "/www/index.html.gz" ~target:"a.txt.gz";
  let caps = In_memory.services mem in
  let get ?(on = true) ?(path = "/a.txt") headers =
    serve ~precompressed:on ~headers caps path
  in
  let served r =
    (body r, Response.header r "content-encoding", Response.header r "vary")
  in
  let check name expected r =
    Alcotest.(check (triple string (option string) (option string)))
      name expected (served r)
  in
  let vary = Some "Accept-Encoding" in
  check "off: the file"
    ("file /www/a.txt 0+10", None, None)
    (get ~on:false [ ("Accept-Encoding", "gzip, br") ]);
  check "br first"
    ("file /www/a.txt.br 0+6", Some "br", vary)
    (get [ ("Accept-Encoding", "gzip, br") ]);
  check "gzip"
    ("file /www/a.txt.gz 0+2", Some "gzip", vary)
    (get [ ("Accept-Encoding", "gzip") ]);
  check "br refused with q=0"
    ("file /www/a.txt.gz 0+2", Some "gzip", vary)
    (get [ ("Accept-Encoding", "br;q=0, gzip;q=0.5") ]);
  check "*"
    ("file /www/a.txt.br 0+6", Some "br", vary)
    (get [ ("Accept-Encoding", "*") ]);
  check "identity only"
    ("file /www/a.txt 0+10", None, vary)
    (get [ ("Accept-Encoding", "identity") ]);
  check "no Accept-Encoding" ("file /www/a.txt 0+10", None, vary) (get []);
  check "a Range: the file's bytes"
    ("file /www/a.txt 0+2", None, vary)
    (get [ ("Accept-Encoding", "gzip"); ("Range", "bytes=0-1") ]);
  check "only a .gz"
    ("file /www/style.css 0+3", None, vary)
    (get ~path:"/style.css" [ ("Accept-Encoding", "br") ]);
  check "a link is not a variant"
    ("file /www/index.html 0+4", None, vary)
    (get ~path:"/" [ ("Accept-Encoding", "gzip") ]);
  let r = get [ ("Accept-Encoding", "gzip") ] in
  Alcotest.(check (option string))
    "the file's type" (Some "text/plain")
    (Response.header r "content-type");
  Alcotest.(check bool)
    "the variant's own ETag" true
    (Response.header r "etag" <> Response.header (get []) "etag");
  let tag = Option.get (Response.header r "etag") in
  check_status "its ETag revalidates it" 304
    (get [ ("Accept-Encoding", "gzip"); ("If-None-Match", tag) ])

let ranged () =
  let caps = In_memory.services (mem_site ()) in
  let get headers = serve ~headers caps "/a.txt" in
  let r = get [ ("Range", "bytes=2-4") ] in
  check_status "206" 206 r;
  Alcotest.(check string) "slice" "file /www/a.txt 2+3" (body r);
  Alcotest.(check (option string))
    "Content-Range" (Some "bytes 2-4/10")
    (Response.header r "content-range");
  let r = get [ ("Range", "bytes=-3") ] in
  Alcotest.(check string) "suffix" "file /www/a.txt 7+3" (body r);
  let r = get [ ("Range", "bytes=10-") ] in
  check_status "416" 416 r;
  Alcotest.(check (option string))
    "416 Content-Range" (Some "bytes */10")
    (Response.header r "content-range");
  check_status "several ranges: whole" 200 (get [ ("Range", "bytes=0-1,4-5") ]);
  check_status "invalid: whole" 200 (get [ ("Range", "bytes=4-1") ]);
  check_status "If-Range matching" 206
    (get
       [ ("Range", "bytes=0-1"); ("If-Range", "Sun, 09 Sep 2001 01:46:40 GMT") ]);
  check_status "If-Range older" 200
    (get
       [ ("Range", "bytes=0-1"); ("If-Range", "Sun, 09 Sep 2001 01:46:39 GMT") ]);
  check_status "If-Range with an entity tag" 200
    (get [ ("Range", "bytes=0-1"); ("If-Range", "\"abc\"") ]);
  check_status "If-Range twice" 200
    (get
       [
         ("Range", "bytes=0-1");
         ("If-Range", "Sun, 09 Sep 2001 01:46:40 GMT");
         ("If-Range", "Sun, 09 Sep 2001 01:46:40 GMT");
       ])

(* RFC 9110 §14.2: "A server MUST ignore a Range header field received with
   a request method that is unrecognized or for which range handling is not
   defined", and GET is the only method that defines it: HEAD gets the 200
   that GET without Range would. *)
let range_only_for_get () =
  let caps = In_memory.services (mem_site ()) in
  let head headers = serve ~meth:HEAD ~headers caps "/a.txt" in
  let r = head [ ("Range", "bytes=2-4") ] in
  check_status "HEAD with Range" 200 r;
  Alcotest.(check string) "the whole file" "file /www/a.txt 0+10" (body r);
  Alcotest.(check (option string))
    "no Content-Range" None
    (Response.header r "content-range");
  check_status "HEAD with an unsatisfiable Range" 200
    (head [ ("Range", "bytes=20-") ]);
  check_status "GET with Range" 206
    (serve ~headers:[ ("Range", "bytes=2-4") ] caps "/a.txt")

(* The same rules on the real file system, where links, special files and
   the content cache are real. *)
let with_temp_dir f =
  let dir = Filename.temp_dir "braid-static" "" in
  let dir = Unix.realpath dir in
  Fun.protect
    ~finally:(fun () -> ignore (Sys.command ("rm -rf " ^ Filename.quote dir)))
    (fun () -> f dir)

let write_file path content =
  Out_channel.with_open_bin path (fun oc -> output_string oc content)

let real_files () =
  with_temp_dir @@ fun dir ->
  let root = Filename.concat dir "www" in
  Unix.mkdir root 0o755;
  Unix.mkdir (Filename.concat root "sub") 0o755;
  write_file (Filename.concat root "a.txt") "0123456789";
  write_file (Filename.concat dir "secret.txt") "secret";
  Unix.mkdir (dir ^ "/www-evil") 0o755;
  write_file (dir ^ "/www-evil/x.txt") "x";
  Unix.symlink "a.txt" (root ^ "/inside");
  Unix.symlink (dir ^ "/secret.txt") (root ^ "/outside");
  Unix.symlink "../../secret.txt" (root ^ "/sub/outside-rel");
  Unix.symlink "/" (root ^ "/slash");
  Unix.symlink (dir ^ "/www-evil") (root ^ "/sibling");
  Unix.mkfifo (root ^ "/fifo") 0o644;
  let production = Real_services.create (Real_services.settings Router.empty) in
  let caps = Real_services.services production in
  let get path = serve ~root caps path in
  check_status "file" 200 (get "/a.txt");
  check_status "link inside" 200 (get "/inside");
  check_status "link outside" 403 (get "/outside");
  check_status "relative link outside" 403 (get "/sub/outside-rel");
  check_status "link to /" 403 (get "/slash/etc/passwd");
  check_status "sibling with the root as prefix" 403 (get "/sibling/x.txt");
  check_status "FIFO never opened" 403 (get "/fifo");
  check_status "missing" 404 (get "/nope");
  (* One file the application names: a special file is never opened. *)
  let file path =
    Services.run caps (fun () ->
        Static.file (Handler.request_for_test "/x") (root ^ path))
  in
  check_status "Static.file: a file" 200 (file "/a.txt");
  check_status "Static.file: a FIFO never opened" 403 (file "/fifo");
  check_status "Static.file: a directory" 404 (file "/sub");
  check_status "Static.file: missing" 404 (file "/nope");
  (* The cache follows the file. *)
  let contents () =
    match get "/a.txt" with
    | { body = File { path; info; offset; length }; _ } -> (
        match caps.open_file path info with
        | Ok (In_memory s) -> String.sub s offset length
        | Ok (Reader { read; close; _ }) ->
            let b = Bytes.create length in
            let n = read ~offset b 0 length in
            close ();
            Bytes.sub_string b 0 n
        | Error e -> File.error_to_string e)
    | r -> Printf.sprintf "status %d" r.status
  in
  Alcotest.(check string) "first" "0123456789" (contents ());
  Alcotest.(check string) "cached" "0123456789" (contents ());
  write_file (Filename.concat root "a.txt") "changed!";
  Alcotest.(check string) "changed on disk" "changed!" (contents ());
  Unix.unlink (Filename.concat root "a.txt");
  write_file (Filename.concat root "a.txt") "new file";
  Alcotest.(check string) "replaced (same size)" "new file" (contents ())

module Gate = Test_support.Gate

(* On a loop, the requests one poll woke share one look at a path; a later
   poll looks again. Outside a loop every call looks. The look is made on the
   loop when the kernel has the path cached. *)
let metadata_per_poll () =
  with_temp_dir @@ fun dir ->
  let path = Filename.concat dir "a.txt" in
  let caps =
    Real_services.services
      (Real_services.create (Real_services.settings Router.empty))
  in
  let found () =
    match caps.stat ~follow:false path with Ok _ -> true | Error _ -> false
  in
  Braid_io.run (fun () ->
      write_file path "x";
      Alcotest.(check bool) "there" true (found ());
      Unix.unlink path;
      Alcotest.(check bool) "same poll: the answer it saw" true (found ());
      Braid_io.Time.sleep 0.001;
      Alcotest.(check bool) "next poll: gone" false (found ());
      write_file path "y";
      Alcotest.(check bool) "same poll: still gone" false (found ());
      Braid_io.Time.sleep 0.001;
      Alcotest.(check bool) "next poll: back" true (found ()));
  Unix.unlink path;
  Alcotest.(check bool) "outside a loop: looks each time" false (found ())

(* The same on the pool (every call sent there): the requests of one poll
   wait for one look. The pool's one thread is held at a gate, so the looks
   asked for can be counted while they wait. *)
let metadata_per_poll_on_the_pool () =
  with_temp_dir @@ fun dir ->
  let path = Filename.concat dir "a.txt" in
  let caps =
    Real_services.services
      (Real_services.create
         (Real_services.settings ~cached_lookups:false Router.empty))
  in
  let found () =
    match caps.stat ~follow:false path with Ok _ -> true | Error _ -> false
  in
  let pool = Braid_io.Blocking.create ~max_threads:1 () in
  Fun.protect ~finally:(fun () -> Braid_io.Blocking.shutdown pool) @@ fun () ->
  Braid_io.run (fun () ->
      Braid_io.Blocking.with_pool pool @@ fun () ->
      write_file path "x";
      Alcotest.(check bool) "there" true (found ());
      let gate = Gate.create () and holding = Atomic.make false in
      let held =
        Braid.Fiber.fork (fun () ->
            Braid_io.Blocking.run ~pool (fun () ->
                Atomic.set holding true;
                Gate.wait gate))
      in
      (* Whatever the checks below say, the gate opens: a failed check must
         not leave the loop waiting for ever. *)
      Fun.protect
        ~finally:(fun () -> Gate.open_ gate)
        (fun () ->
          (* Not [busy]: the thread may still be finishing the last look. *)
          let rec until_held () =
            if not (Atomic.get holding) then (
              Braid_io.Time.sleep 0.001;
              until_held ())
          in
          until_held ();
          (* Three requests: one look per poll they were asked in (the
             loop may poll between two of them), queued behind the gate. *)
          let asked_in = ref [] in
          let asks =
            List.init 3 (fun _ ->
                Braid.Fiber.fork (fun () ->
                    asked_in := Option.get (Braid_io.polls ()) :: !asked_in;
                    found ()))
          in
          (* Let them, and the fibers that make the looks, run. *)
          for _ = 1 to 10 do
            Braid.Fiber.yield ()
          done;
          let polls = List.sort_uniq compare !asked_in in
          Alcotest.(check int) "all asked" 3 (List.length !asked_in);
          Alcotest.(check int)
            "one look per poll" (List.length polls)
            (Braid_io.Blocking.stats pool).queued;
          Gate.open_ gate;
          Braid.Fiber.join held;
          Alcotest.(check (list bool))
            "all saw it" [ true; true; true ]
            (List.map Braid.Fiber.join asks));
      Unix.unlink path;
      Alcotest.(check bool) "a later poll looks again: gone" false (found ()));
  Alcotest.(check bool) "outside a loop" false (found ())

(* {1 Logs and output} *)

let rfc_example = 784111777. (* RFC 9110 §5.6.7 *)

let combined_log () =
  let req =
    request
      ~headers:[ ("Referer", "http://r/"); ("User-Agent", "ua \"quoted\"") ]
      "/a b"
  in
  let line =
    Log.combined
      {
        peer = Some (Unix.ADDR_INET (Unix.inet_addr_of_string "10.0.0.1", 5));
        time = rfc_example;
        request = Some req;
        status = 200;
        body_bytes = 1234;
      }
  in
  Alcotest.(check string)
    "line"
    "10.0.0.1 - - [06/Nov/1994:08:49:37 +0000] \"GET /a b HTTP/1.1\" 200 1234 \
     \"http://r/\" \"ua \\x22quoted\\x22\""
    line;
  Alcotest.(check string)
    "unparsed request"
    "- - - [06/Nov/1994:08:49:37 +0000] \"-\" 400 - \"-\" \"-\""
    (Log.combined
       {
         peer = None;
         time = rfc_example;
         request = None;
         status = 400;
         body_bytes = 0;
       })

let output () =
  let writes = ref [] in
  let o =
    Output.create ~size:64 (fun b off len ->
        writes := Bytes.sub_string b off len :: !writes)
  in
  Output.add_string o "n=";
  Output.add_int o 0;
  Output.add_char o ' ';
  Output.add_int o 1234567890;
  Output.add_char o ' ';
  Output.add_hex o 255;
  Output.add_char o ' ';
  Output.add_hex o 0;
  Output.flush o;
  Alcotest.(check (list string)) "digits" [ "n=0 1234567890 ff 0" ] !writes;
  writes := [];
  Output.add_string o "head";
  let big = Bytes.make 10_000 'x' in
  Output.send o big 0 10_000;
  Alcotest.(check (list int))
    "a large body goes out directly, after the head" [ 10_000; 4 ]
    (List.map String.length !writes);
  writes := [];
  Output.add_string o (String.make 100 'y');
  Output.flush o;
  Alcotest.(check (list int))
    "grows for a long head" [ 100 ]
    (List.map String.length !writes)

let () =
  Test_support.Watchdog.start "test_units";
  Alcotest.run "server units"
    [
      ( "protocol",
        [
          Alcotest.test_case "responses built right or not at all" `Quick
            response_construction;
          Alcotest.test_case "date cache" `Quick date_cache;
          Alcotest.test_case "content type remembered" `Quick content_type_memo;
        ] );
      ( "routing",
        [
          Alcotest.test_case "router" `Quick routing;
          Alcotest.test_case "routes that begin with literals" `Quick
            routing_literal_heads;
        ] );
      ( "static",
        [
          Alcotest.test_case "files" `Quick static_files;
          Alcotest.test_case "escapes" `Quick escapes;
          Alcotest.test_case "conditional" `Quick conditional;
          Alcotest.test_case "If-Modified-Since ignored" `Quick
            if_modified_since_ignored;
          Alcotest.test_case "preconditions only for 2xx" `Quick
            preconditions_only_for_2xx;
          Alcotest.test_case "ranges" `Quick ranged;
          Alcotest.test_case "entity tags" `Quick entity_tags;
          Alcotest.test_case "precompressed variants" `Quick precompressed;
          Alcotest.test_case "If-Match and If-Unmodified-Since" `Quick
            if_match_and_if_unmodified_since;
          Alcotest.test_case "Range only for GET" `Quick range_only_for_get;
          Alcotest.test_case "real file system" `Quick real_files;
          Alcotest.test_case "metadata read once per poll" `Quick
            metadata_per_poll;
          Alcotest.test_case "metadata once per poll, on the pool" `Quick
            metadata_per_poll_on_the_pool;
        ] );
      ( "output",
        [
          Alcotest.test_case "combined log format" `Quick combined_log;
          Alcotest.test_case "output buffer" `Quick output;
        ] );
    ]
