(* Unit tests of braid_http's protocol values: status lines, dates, paths,
   ranges, entity tags, content codings, and what a body reader reserves.
   None needs a server (they were in test/server/test_units.ml). *)

open Braid_http

(* {1 Status and dates} *)

let status () =
  Alcotest.(check string)
    "line" "HTTP/1.1 404 Not Found\r\n" (Status.status_line 404);
  Alcotest.(check string) "413" "Content Too Large" (Status.reason 413);
  Alcotest.(check string) "unknown" "Client Error" (Status.reason 499);
  Alcotest.(check string)
    "unregistered" "HTTP/1.1 599 Server Error\r\n" (Status.status_line 599);
  Alcotest.(check (list bool))
    "valid codes are 100 to 599"
    [ false; true; true; false; false ]
    (List.map Status.is_valid [ 99; 100; 599; 600; 799 ]);
  Alcotest.(check (list bool))
    "no body"
    [ true; true; true; false; false ]
    (List.map Status.has_no_body [ 100; 204; 304; 200; 404 ])

let rfc_example = 784111777. (* RFC 9110 §5.6.7 *)

let dates () =
  Alcotest.(check string)
    "IMF-fixdate" "Sun, 06 Nov 1994 08:49:37 GMT"
    (Http_date.format rfc_example);
  Alcotest.(check string)
    "epoch" "Thu, 01 Jan 1970 00:00:00 GMT" (Http_date.format 0.);
  Alcotest.(check string)
    "leap day" "Tue, 29 Feb 2000 12:00:00 GMT"
    (Http_date.format 951825600.);
  Alcotest.(check string)
    "fractions round down" "Sun, 06 Nov 1994 08:49:37 GMT"
    (Http_date.format (rfc_example +. 0.999));
  let parses = Alcotest.(check (option (float 0.))) in
  parses "IMF" (Some rfc_example)
    (Http_date.parse "Sun, 06 Nov 1994 08:49:37 GMT");
  parses "RFC 850" (Some rfc_example)
    (Http_date.parse "Sunday, 06-Nov-94 08:49:37 GMT");
  parses "asctime" (Some rfc_example)
    (Http_date.parse "Sun Nov  6 08:49:37 1994");
  parses "whitespace" (Some rfc_example)
    (Http_date.parse "  Sun, 06 Nov 1994 08:49:37 GMT ");
  parses "two-digit year 2000s" (Some 1000000000.)
    (Http_date.parse "Sunday, 09-Sep-01 01:46:40 GMT");
  List.iter
    (fun s -> parses s None (Http_date.parse s))
    [
      "";
      "yesterday";
      "Sun, 30 Feb 1994 08:49:37 GMT";
      "Sun, 06 Nov 1994 24:00:00 GMT";
      "Sun, 06 Nov 1994 08:49:37 UTC";
      "Xyz, 06 Nov 1994 08:49:37 GMT";
      "Sun, 06 Foo 1994 08:49:37 GMT";
      "Sun, 6 Nov 1994 08:49:37 GMT";
      "Sunday, 06-Nov-1994 08:49:37 GMT";
      "Sun Nov 6 08:49:37 1994";
    ];
  (* Every second of a few years formats and parses back. *)
  let t = ref 0. in
  while !t < 4e9 do
    let s = Http_date.format !t in
    (match Http_date.parse s with
    | Some back when back = Float.floor !t -> ()
    | _ -> Alcotest.failf "round trip of %.0f (%s)" !t s);
    t := !t +. 9_876_543.21
  done

(* RFC 9110 §5.6.7: "Recipients of a timestamp value in rfc850-date format,
   which uses a two-digit year, MUST interpret a timestamp that appears to be
   more than 50 years in the future as representing the most recent year in
   the past that had the same last two digits." *)
let rfc850_year_within_50_years () =
  let parses = Alcotest.(check (option (float 0.))) in
  let year_2026 =
    1767225600.
    (* Thu, 01 Jan 2026 00:00:00 GMT *)
  in
  parses "70 is 2070 in 2026" (Some 3155760000.)
    (Http_date.parse ~now:year_2026 "Wednesday, 01-Jan-70 00:00:00 GMT");
  parses "94 is 1994 in 2026" (Some rfc_example)
    (Http_date.parse ~now:year_2026 "Sunday, 06-Nov-94 08:49:37 GMT");
  parses "26 is 2026 in 2026" (Some year_2026)
    (Http_date.parse ~now:year_2026 "Thursday, 01-Jan-26 00:00:00 GMT");
  (* In 1994, 2044 is 50 years ahead and 2045 more than that. *)
  parses "44 is 2044 in 1994" (Some 2335219200.)
    (Http_date.parse ~now:rfc_example "Friday, 01-Jan-44 00:00:00 GMT");
  parses "45 is 1945 in 1994" (Some (-788918400.))
    (Http_date.parse ~now:rfc_example "Monday, 01-Jan-45 00:00:00 GMT");
  parses "four-digit years are not moved" (Some 3155760000.)
    (Http_date.parse ~now:rfc_example "Wed, 01 Jan 2070 00:00:00 GMT")

(* {1 Bodies} *)

(* A head declaring 2 GB, then 3 bytes and the end: the old reader reserved
   the declared length up front. Now nothing is reserved ahead of 64 KiB. *)
let body_length_reserves_nothing () =
  let limits = { Limits.default with max_body = 4_000_000_000 } in
  let message =
    "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000000\r\n\r\nabc"
  in
  let allocated () =
    let s = Gc.quick_stat () in
    s.minor_words +. s.major_words -. s.promoted_words
  in
  let before = allocated () in
  let result =
    Input.with_string message (fun input ->
        match Request_parser.read_request input limits with
        | Ok r ->
            Request_body.to_string (Request_body.create input limits r.body)
        | Error _ -> Alcotest.fail "head refused")
  in
  let words = allocated () -. before in
  (match result with
  | Error e -> Alcotest.(check int) "truncated" 400 e.status
  | Ok _ -> Alcotest.fail "read 2 GB from 3 bytes");
  if words > 100_000. then
    Alcotest.failf "allocated %.0f words for a 3-byte body" words

(* {1 Paths} *)

let split () =
  let check target path query =
    Alcotest.(check (pair string (option string)))
      target (path, query)
      (Url_path.split_target target)
  in
  check "/a/b?x=1" "/a/b" (Some "x=1");
  check "/" "/" None;
  check "/a?" "/a" (Some "");
  check "http://h:80/a?q" "/a" (Some "q");
  check "http://h" "/" None;
  check "http://h?q" "/" (Some "q");
  check "*" "*" None

let path_result =
  Alcotest.(
    result (list string)
      (testable
         (fun ppf e -> Format.pp_print_string ppf (Url_path.error_to_string e))
         ( = )))

(* RFC 3986 §5.2.4, with %2e as a dot and climbing above the root refused. *)
let normalize () =
  let check path expected =
    Alcotest.(check (result string string))
      path expected
      (Result.map_error Url_path.error_to_string (Url_path.normalize path))
  in
  let ok path normal = check path (Ok normal)
  and escapes path = check path (Error "path escapes the root") in
  List.iter
    (fun p -> ok p p)
    [
      "/";
      "/1k.txt";
      "/a/b/";
      "/a//b";
      "/.hidden";
      "/...";
      "/a.b/c.";
      "/%2e%2e%2e";
      "/%2f..";
    ];
  ok "/1k.txt/." "/1k.txt/";
  ok "/." "/";
  ok "/%2e" "/";
  ok "/%2E/" "/";
  ok "/sub/.." "/";
  ok "/sub/%2e%2E" "/";
  ok "/a/./b/../c" "/a/c";
  ok "/./fib/3" "/fib/3";
  ok "/a//.." "/a/";
  ok "/a/.%2e/b" "/b";
  ok "/a/b/.." "/a/";
  escapes "/..";
  escapes "/a/../../x";
  escapes "/%2e%2e/etc/passwd";
  check "a/b" (Error "path is not absolute")

let resolve () =
  let ok path segs =
    Alcotest.check path_result path (Ok segs) (Url_path.resolve path)
  in
  let bad path e =
    Alcotest.check path_result path (Error e) (Url_path.resolve path)
  in
  ok "/" [];
  ok "/a/b.txt" [ "a"; "b.txt" ];
  ok "//a///b/" [ "a"; "b" ];
  ok "/a/./b/../c" [ "a"; "c" ];
  ok "/a/%2e%2E/a/c" [ "a"; "c" ];
  ok "/a%20b" [ "a b" ];
  ok "/%41%62" [ "Ab" ];
  ok "/a/.." [];
  ok "/..a/b.." [ "..a"; "b.." ];
  ok "/%2e%2ex" [ "..x" ];
  (* At the edge of the one-pass split of plain paths: three dots, dots
     inside a name, a dot or two dots as the last segment. *)
  ok "/..." [ "..." ];
  ok "/a/.b/c." [ "a"; ".b"; "c." ];
  ok "/a/b/." [ "a"; "b" ];
  ok "/a/b/.." [ "a" ];
  ok "/a/b//" [ "a"; "b" ];
  bad "/.." Escapes_root;
  bad "/../etc/passwd" Escapes_root;
  bad "/a/../../etc/passwd" Escapes_root;
  bad "/%2e%2e/etc/passwd" Escapes_root;
  bad "/%2E%2E/etc/passwd" Escapes_root;
  bad "/.%2e/etc/passwd" Escapes_root;
  bad "/a/%2e%2e/%2e%2e/x" Escapes_root;
  bad "/..%2fetc%2fpasswd" Encoded_slash;
  bad "/a%2fb" Encoded_slash;
  bad "/%2F" Encoded_slash;
  bad "/a%00b" Nul_byte;
  bad "/a%zzb" Bad_escape;
  bad "/a%2" Bad_escape;
  bad "/a%" Bad_escape;
  bad "a/b" Not_absolute;
  bad "" Not_absolute

let segments () =
  let ok path segs =
    Alcotest.check path_result path (Ok segs) (Url_path.segments path)
  in
  ok "/" [];
  ok "/fib/10" [ "fib"; "10" ];
  ok "/a//b/" [ "a"; ""; "b"; "" ];
  ok "/a/./b/.." [ "a"; "."; "b"; ".." ];
  ok "/a/b." [ "a"; "b." ];
  ok "/a%2Fb" [ "a/b" ]

let encode () =
  List.iter
    (fun s ->
      let e = Url_path.encode_segment s in
      Alcotest.(check (result string reject))
        ("round trip " ^ String.escaped s)
        (Ok s)
        (Result.map_error ignore (Url_path.percent_decode e)))
    [ "plain"; "a b"; "a/b"; "%"; "?#"; "\000\255"; "é" ];
  Alcotest.(check string)
    "of_segments" "/a%20b/c%2Fd"
    (Url_path.of_segments [ "a b"; "c/d" ])

(* {1 Ranges} *)

let range_t =
  Alcotest.testable
    (fun ppf -> function
      | Range.Whole -> Format.fprintf ppf "Whole"
      | Part { first; last } -> Format.fprintf ppf "Part %d-%d" first last
      | Unsatisfiable -> Format.fprintf ppf "Unsatisfiable")
    ( = )

let ranges () =
  let check field ?(size = 100) expected =
    Alcotest.check range_t
      (Printf.sprintf "%s of %d" field size)
      expected
      (Range.resolve field ~size)
  in
  let part first last = Range.Part { first; last } in
  check "bytes=0-9" (part 0 9);
  check "bytes=10-" (part 10 99);
  check "bytes=-10" (part 90 99);
  check "bytes=-1000" (part 0 99);
  check "bytes=90-1000" (part 90 99);
  check "bytes=99-99" (part 99 99);
  check "BYTES=0-0" (part 0 0);
  check "bytes= 5-6 " (part 5 6);
  check "bytes=0-99999999999999999999999" (part 0 99);
  check "bytes=100-" Unsatisfiable;
  check "bytes=100-200" Unsatisfiable;
  check "bytes=-0" Unsatisfiable;
  check "bytes=0-0" ~size:0 Unsatisfiable;
  check "bytes=-5" ~size:0 Unsatisfiable;
  check "bytes=99999999999999999999999-" Unsatisfiable;
  check "bytes=0-1,5-6" Whole;
  check "bytes=5-1" Whole;
  check "bytes=a-b" Whole;
  check "bytes=1 -2" Whole;
  check "bytes=" Whole;
  check "bytes=-" Whole;
  check "items=0-1" Whole;
  check "0-1" Whole;
  Alcotest.(check string)
    "content range" "bytes 2-4/10"
    (Range.content_range ~first:2 ~last:4 ~size:10);
  Alcotest.(check string)
    "unsatisfied" "bytes */10"
    (Range.unsatisfied_range ~size:10)

(* {1 Entity tags and content codings} *)

let entity_tag_syntax () =
  let open Entity_tag in
  let tags = function
    | Some (Tags ts) -> List.map to_string ts
    | Some Any -> [ "*" ]
    | None -> [ "none" ]
  in
  Alcotest.(check (list string))
    "a list across lines, a comma inside a tag"
    [ "\"a\""; "W/\"b,c\""; "\"d\"" ]
    (tags (condition [ " \"a\" , W/\"b,c\""; ",\"d\"," ]));
  Alcotest.(check (list string)) "*" [ "*" ] (tags (condition [ "*" ]));
  Alcotest.(check (list string))
    "* with tags" [ "none" ]
    (tags (condition [ "*, \"a\"" ]));
  Alcotest.(check (list string))
    "unquoted" [ "none" ]
    (tags (condition [ "abc" ]));
  Alcotest.(check (list string)) "empty" [ "none" ] (tags (condition [ " " ]));
  Alcotest.(check bool)
    "a double quote inside" true
    (Option.is_none (of_string "\"a\"b\""));
  Alcotest.check_raises "strong refuses a double quote"
    (Invalid_argument "Entity_tag.strong: a byte an entity tag may not hold")
    (fun () -> ignore (strong "a\"b"));
  Alcotest.(check bool)
    "weak and strong match weakly" true
    (weak_match (strong "x") (Option.get (of_string "W/\"x\"")));
  Alcotest.(check bool)
    "but not strongly" false
    (strong_match (strong "x") (Option.get (of_string "W/\"x\"")))

let content_coding () =
  let accepts field coding = Content_coding.accepted [ field ] coding in
  Alcotest.(check bool) "listed" true (accepts "gzip, deflate" "gzip");
  Alcotest.(check bool) "any case" true (accepts "GZip" "gzip");
  Alcotest.(check bool) "q=0" false (accepts "gzip;q=0" "gzip");
  Alcotest.(check bool) "q=0.000" false (accepts "gzip; q=0.000" "gzip");
  Alcotest.(check bool) "q=0.001" true (accepts "gzip;q=0.001" "gzip");
  Alcotest.(check bool) "q=1.0" true (accepts "gzip;q=1.0" "gzip");
  Alcotest.(check bool) "bad weight: skipped" false (accepts "gzip;q=2" "gzip");
  Alcotest.(check bool) "* " true (accepts "*" "br");
  Alcotest.(check bool) "listed beats *" false (accepts "br;q=0, *" "br");
  Alcotest.(check bool) "not listed" false (accepts "gzip" "br");
  Alcotest.(check bool) "no field" false (Content_coding.accepted [] "gzip");
  Alcotest.(check bool)
    "across lines" true
    (Content_coding.accepted [ "deflate"; "br" ] "br")

(* Headers.is_value checks eight bytes at a time, is_name through a table:
   both agree with the RFC 9110 §5.5 and §5.6.2 definitions, byte by byte,
   on random strings of every length up to 40 made mostly of the bytes at
   the edges (controls, space, tab, DEL, obs-text), and with one bad byte
   in each position of a long good value. *)
(* RFC 9110 §7.6.1's fields in any case, and near misses of each length. *)
let hop_by_hop () =
  List.iter
    (fun name -> Alcotest.(check bool) name true (Headers.is_hop_by_hop name))
    [
      "Connection";
      "keep-alive";
      "Proxy-Connection";
      "TE";
      "transfer-encoding";
      "UPGRADE";
    ];
  List.iter
    (fun name -> Alcotest.(check bool) name false (Headers.is_hop_by_hop name))
    [
      "";
      "tt";
      "content-length";
      "upgrades";
      "connectiox";
      "keep-alivf";
      "trailer";
      "proxy-connectioN2";
      "transfer-encodinG" ^ "s";
      "host";
    ]

let field_checks () =
  let field_char c = c = ' ' || c = '\t' || (c >= '!' && c <> '\127') in
  let tchar c =
    (c >= 'a' && c <= 'z')
    || (c >= 'A' && c <= 'Z')
    || (c >= '0' && c <= '9')
    || String.contains "!#$%&'*+-.^_`|~" c
  in
  let edges = "\000\t\n\r\031 !~\127\128\255aZ-\"" in
  let rng = Random.State.make [| 35 |] in
  for _ = 1 to 200_000 do
    let n = Random.State.int rng 41 in
    let s =
      String.init n (fun _ ->
          if Random.State.int rng 4 = 0 then
            edges.[Random.State.int rng (String.length edges)]
          else Char.chr (32 + Random.State.int rng 95))
    in
    if Braid_http.Headers.is_value s <> String.for_all field_char s then
      Alcotest.failf "is_value %S" s;
    if Braid_http.Headers.is_name s <> (s <> "" && String.for_all tchar s) then
      Alcotest.failf "is_name %S" s
  done;
  let good = String.make 64 'v' in
  for i = 0 to 63 do
    List.iter
      (fun c ->
        let s = String.mapi (fun j x -> if i = j then c else x) good in
        if Braid_http.Headers.is_value s <> field_char c then
          Alcotest.failf "is_value with %C at %d" c i)
      [ '\000'; '\t'; '\n'; '\031'; ' '; '\127'; '\128'; '\255' ]
  done

let () =
  Test_support.Watchdog.start "test_protocol";
  Alcotest.run "http protocol values"
    [
      ( "protocol",
        [
          Alcotest.test_case "status" `Quick status;
          Alcotest.test_case "field names and values" `Quick field_checks;
          Alcotest.test_case "hop-by-hop fields" `Quick hop_by_hop;
          Alcotest.test_case "a declared length reserves nothing" `Quick
            body_length_reserves_nothing;
          Alcotest.test_case "dates" `Quick dates;
          Alcotest.test_case "ranges" `Quick ranges;
          Alcotest.test_case "rfc850 year within 50 years" `Quick
            rfc850_year_within_50_years;
        ] );
      ( "paths",
        [
          Alcotest.test_case "split target" `Quick split;
          Alcotest.test_case "normalize" `Quick normalize;
          Alcotest.test_case "resolve" `Quick resolve;
          Alcotest.test_case "segments" `Quick segments;
          Alcotest.test_case "encode" `Quick encode;
        ] );
      ( "entity tags and codings",
        [
          Alcotest.test_case "entity-tag syntax" `Quick entity_tag_syntax;
          Alcotest.test_case "Accept-Encoding" `Quick content_coding;
        ] );
    ]
