(* The JSON reader (Json.of_string) on every class of input RFC 8259 refuses
   and yojson's reader accepted, on valid documents, on the depth limit, and
   Json.body through the in-memory server with the bodies of issue 39. *)

open Braid_server
open Braid_web
open Handler.Syntax

(* Compared as printed: ( = ) takes -0. for 0. *)
let json =
  Alcotest.testable
    (fun f j -> Format.pp_print_string f (Yojson.Safe.to_string j))
    (fun a b ->
      String.equal (Yojson.Safe.to_string a) (Yojson.Safe.to_string b))

let parse = Json.of_string
let deep n = String.make n '[' ^ String.make n ']'

(* Refused, and the error names the byte offset [at]. *)
let refused ?at s =
  match parse s with
  | Ok v -> Alcotest.failf "%S accepted as %s" s (Yojson.Safe.to_string v)
  | Error e -> (
      match at with
      | None -> ()
      | Some at ->
          let prefix = Printf.sprintf "at byte %d: " at in
          if not (String.starts_with ~prefix e) then
            Alcotest.failf "%S: %S does not start with %S" s e prefix)

let all_refused l () = List.iter (fun (s, at) -> refused ?at s) l

(* {1 Refused} *)

(* yojson's extensions, which let a comment hide brackets from the old depth
   scan. *)
let extensions =
  all_refused
    [
      ("/* */ 1", Some 0);
      ("// x\n1", Some 0);
      ("# x\n1", Some 0);
      ("[1 /* */]", Some 3);
      ("1 // x", Some 2);
      ("[1, // x\n2]", Some 4);
      ("(1, 2)", Some 0);
      ({|<"A">|}, Some 0);
      ({|<"A": 1>|}, Some 0);
      ({|["a", <"B">]|}, Some 6);
    ]

let constants =
  all_refused
    [
      ("NaN", Some 0);
      ("Infinity", Some 0);
      ("-Infinity", Some 1);
      ("[NaN]", Some 1);
      ({|{"a": -Infinity}|}, Some 7);
      ("nan", Some 0);
      ("True", Some 0);
      ("NULL", Some 0);
      ("tru", Some 0);
      ("nul", Some 0);
      ("nulll", Some 4);
      ("truex", Some 4);
      ("undefined", Some 0);
    ]

let keys =
  all_refused
    [
      ("{a: 1}", Some 1);
      ("{'a': 1}", Some 1);
      ("'a'", Some 0);
      ("{1: 1}", Some 1);
      ({|{"a" 1}|}, Some 5);
      ({|{"a":}|}, Some 5);
      ("{,}", Some 1);
      ({|{"a":1,}|}, Some 7);
      ({|{"a":1 "b":2}|}, Some 7);
      ({|{"a":1]|}, Some 6);
    ]

let arrays =
  all_refused
    [
      ("[1,]", Some 3);
      ("[,1]", Some 1);
      ("[1 2]", Some 3);
      ("[1,,2]", Some 3);
      ("[1}", Some 2);
      ("[", Some 1);
      ("[1", Some 2);
      ("]", Some 0);
    ]

let numbers =
  all_refused
    [
      ("+1", Some 0);
      ("01", Some 0);
      ("-01", Some 1);
      ("00", Some 0);
      (".5", Some 0);
      ("1.", Some 2);
      ("1.e5", Some 2);
      ("1e", Some 2);
      ("1e+", Some 3);
      ("1E-", Some 3);
      ("0x1", Some 1);
      ("-", Some 1);
      ("--1", Some 1);
      ("- 1", Some 1);
      ("1_000", Some 1);
      ("1e400", Some 0);
      ("-1e400", Some 0);
      ("[1e999999999]", Some 1);
      ("1.5f", Some 3);
    ]

let strings =
  all_refused
    [
      ("\"a\000b\"", Some 2);
      ("\"\031\"", Some 1);
      ("\"a\nb\"", Some 2);
      ("\"\t\"", Some 1);
      ({|"\x41"|}, Some 1);
      ({|"\a"|}, Some 1);
      ({|"\'"|}, Some 1);
      ({|"\U0041"|}, Some 1);
      ({|"\u12"|}, Some 3);
      ({|"\u12G4"|}, Some 5);
      ({|"abc|}, Some 0);
      ({|"abc\|}, Some 4);
      ({|["a", "b]|}, Some 6);
    ]

(* A [`String] is UTF-8, which cannot encode a surrogate: escapes of lone
   ones are refused (Python's json accepts them). *)
let surrogates =
  all_refused
    [
      ({|"\ud800"|}, Some 1);
      ({|"\uDBFF"|}, Some 1);
      ({|"\udc00"|}, Some 1);
      ({|"\uDFFF"|}, Some 1);
      ({|"\ud800\u0041"|}, Some 1);
      ({|"\ud800x"|}, Some 1);
      ({|"\ud800\n"|}, Some 1);
      ({|"\udc00\ud800"|}, Some 1);
      ({|"\ud800\ud800"|}, Some 1);
      ({|"a\ud83d"|}, Some 2);
    ]

(* RFC 3629 section 4 (and Python's strict UTF-8 decoder). *)
let utf_8 =
  all_refused
    [
      ("\"\x80\"", Some 1);
      ("\"\xbf\"", Some 1);
      ("\"\xc0\x80\"", Some 1);
      ("\"\xc1\xbf\"", Some 1);
      ("\"\xe0\x80\x80\"", Some 1);
      ("\"\xe0\x9f\xbf\"", Some 1);
      ("\"\xed\xa0\x80\"", Some 1);
      ("\"\xed\xbf\xbf\"", Some 1);
      ("\"\xf0\x80\x80\x80\"", Some 1);
      ("\"\xf0\x8f\xbf\xbf\"", Some 1);
      ("\"\xf4\x90\x80\x80\"", Some 1);
      ("\"\xf5\x80\x80\x80\"", Some 1);
      ("\"\xf8\x88\x80\x80\x80\"", Some 1);
      ("\"\xff\"", Some 1);
      ("\"\xfe\"", Some 1);
      ("\"\xc3\"", Some 1);
      ("\"\xe2\x82\"", Some 1);
      ("\"\xe2\x82", Some 1);
      ("\"a\xc3(\"", Some 2);
      ("\"\xf0\x9f\x98\"", Some 1);
      (* Outside strings, any byte that is not ASCII is out of place. *)
      ("\xc3\xa9", Some 0);
      ("[1,\xc2\xa02]", Some 3);
    ]

let whitespace =
  all_refused
    [
      ("\xef\xbb\xbf1", Some 0);
      ("\0121", Some 0);
      ("\0111", Some 0);
      ("\xc2\xa01", Some 0);
      ("1\000", Some 1);
      ("[1,\0122]", Some 3);
    ]

let documents =
  all_refused
    [
      ("1 2", Some 2);
      ("[] x", Some 3);
      ("{}}", Some 2);
      ("[]]", Some 2);
      ({|"a""b"|}, Some 3);
    ]

let empty () =
  List.iter
    (fun s ->
      Alcotest.(check (result json string))
        (Printf.sprintf "%S" s) (Error "empty document") (parse s))
    [ ""; " "; "\r\n\t " ]

(* {1 Depth} *)

let rec nest n = if n = 1 then `List [] else `List [ nest (n - 1) ]

let depth () =
  Alcotest.(check (result json string))
    "512 arrays"
    (Ok (nest 512))
    (parse (deep 512));
  refused ~at:512 (deep 513);
  let objects n =
    String.concat "" (List.init n (fun _ -> {|{"a":|}))
    ^ "1" ^ String.make n '}'
  in
  (match parse (objects 512) with
  | Ok _ -> ()
  | Error e -> Alcotest.failf "512 objects: %s" e);
  refused ~at:(512 * 5) (objects 513);
  (* Mixed, with whitespace: the 513th opening is the one refused. *)
  let mixed =
    String.concat ""
      (List.init 600 (fun i -> if i mod 2 = 0 then " [" else {|{"k" : |}))
  in
  refused ~at:((256 * 2) + (256 * 7) + 1) mixed;
  (* Closed containers give their depth back. *)
  (match parse ("[" ^ deep 511 ^ "," ^ deep 511 ^ "]") with
  | Ok _ -> ()
  | Error e -> Alcotest.failf "siblings: %s" e);
  Alcotest.(check (result json string))
    "max_depth 0: scalars only"
    (Ok (`Int 1))
    (Json.of_string ~max_depth:0 "1");
  (match Json.of_string ~max_depth:0 "[]" with
  | Error "at byte 0: nested more than 0 deep" -> ()
  | r ->
      Alcotest.failf "max_depth 0, []: %s"
        (match r with Ok v -> Yojson.Safe.to_string v | Error e -> e));
  match Json.of_string ~max_depth:2 "[[1],[[2]]]" with
  | Error "at byte 6: nested more than 2 deep" -> ()
  | Error e -> Alcotest.failf "max_depth 2: %s" e
  | Ok _ -> Alcotest.fail "max_depth 2: accepted"

(* The bodies of issue 39: a comment whose quote made the old depth scan
   think the rest was a string. Refused at byte 0, having read nothing. *)
let bypass () =
  List.iter
    (fun s ->
      match parse s with
      | Error e when String.starts_with ~prefix:"at byte 0: " e -> ()
      | Error e -> Alcotest.failf "%S...: %s" (String.sub s 0 8) e
      | Ok _ -> Alcotest.failf "%S...: accepted" (String.sub s 0 8))
    [
      {|/*"*/|} ^ String.make 499_000 '[';
      {|/*"*/|} ^ String.concat "" (List.init 499_000 (fun _ -> "[ "));
      {|/*"*/|} ^ deep 1000;
      "//\"\n" ^ deep 1000;
    ];
  refused ~at:512 (String.make 1_000_000 '[')

(* {1 Accepted} *)

let big = "4611686018427387904"

let values =
  [
    ("0", `Int 0);
    ("-0", `Int 0);
    ("123", `Int 123);
    ("-7", `Int (-7));
    ("4611686018427387903", `Int max_int);
    ("-4611686018427387904", `Int min_int);
    (big, `Intlit big);
    ("-4611686018427387905", `Intlit "-4611686018427387905");
    ("123456789012345678901234567890", `Intlit "123456789012345678901234567890");
    ("1.5", `Float 1.5);
    ("-0.0", `Float (-0.));
    ("1e2", `Float 100.);
    ("1E+2", `Float 100.);
    ("2.5e-3", `Float 0.0025);
    ("1e-400", `Float 0.);
    ("0.1", `Float 0.1);
    ("1.7976931348623157e308", `Float max_float);
    ("true", `Bool true);
    ("false", `Bool false);
    ("null", `Null);
    ({|""|}, `String "");
    ({|"a"|}, `String "a");
    ({|"\"\\\/\b\f\n\r\t"|}, `String "\"\\/\b\012\n\r\t");
    ({|"\u0000\u001f\u00e9\u20AC"|}, `String "\000\031\xc3\xa9\xe2\x82\xac");
    ( {|"\ud83d\ude00\uD800\uDC00\uDBFF\uDFFF"|},
      `String "\xf0\x9f\x98\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf" );
    ( "\"\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\"",
      `String
        "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf"
    );
    ( "\"\xf0\x90\x80\x80\xf3\xbf\xbf\xbf\xf4\x8f\xbf\xbf caf\xc3\xa9\"",
      `String "\xf0\x90\x80\x80\xf3\xbf\xbf\xbf\xf4\x8f\xbf\xbf caf\xc3\xa9" );
    ("[]", `List []);
    ("{}", `Assoc []);
    (" \t\r\n[ 1 , \"x\" ]\n ", `List [ `Int 1; `String "x" ]);
    ( {|{"a":{"b":[null,{}]},"c":[[]]}|},
      `Assoc
        [
          ("a", `Assoc [ ("b", `List [ `Null; `Assoc [] ]) ]);
          ("c", `List [ `List [] ]);
        ] );
    (* Duplicate keys: all kept, in order. *)
    ( {|{"a":1,"b":2,"a":3}|},
      `Assoc [ ("a", `Int 1); ("b", `Int 2); ("a", `Int 3) ] );
    ({|{"":0}|}, `Assoc [ ("", `Int 0) ]);
  ]

(* Each value read again from yojson's printing of it, and from yojson's own
   reader, which agrees on RFC 8259 documents. *)
let round_trip () =
  List.iter
    (fun (s, v) ->
      Alcotest.(check (result json string))
        (Printf.sprintf "%S" s) (Ok v) (parse s);
      Alcotest.(check (result json string))
        (Printf.sprintf "%S printed" s)
        (Ok v)
        (parse (Yojson.Safe.to_string v));
      Alcotest.check json
        (Printf.sprintf "%S by yojson" s)
        v
        (Yojson.Safe.from_string s))
    values;
  let all = `List (List.map snd values) in
  Alcotest.(check (result json string))
    "all in one" (Ok all)
    (parse (Yojson.Safe.pretty_to_string all))

(* {1 Json.body through the server} *)

let app =
  Router.(
    empty
    |> post "/echo" (fun r ->
           let* j = Json.body r in
           Json.response ~status:201 (`Assoc [ ("got", j) ])))

let post body =
  Testing.call ~meth:POST
    ~headers:[ ("Content-Type", "application/json") ]
    ~body app "/echo"

let through_server () =
  let r = post {|{"a": [1, "\u00e9"]}|} in
  Alcotest.(check int) "201" 201 r.status;
  Alcotest.(check string) "echoed" "{\"got\":{\"a\":[1,\"\xc3\xa9\"]}}" r.body;
  List.iter
    (fun (body, says) ->
      let r = post body in
      let name =
        Printf.sprintf "%S" (String.sub body 0 (min 12 (String.length body)))
      in
      Alcotest.(check int) name 400 r.status;
      if not (Text_and_process.contains r.body says) then
        Alcotest.failf "%s: %S does not say %S" name r.body says)
    [
      (* Read, 1000 deep, by yojson after the old scan. *)
      ({|/*"*/|} ^ deep 1000, "invalid JSON: at byte 0");
      ({|/*"*/|} ^ String.make 499_000 '[', "invalid JSON: at byte 0");
      ("//\"\n" ^ deep 1000, "invalid JSON: at byte 0");
      ("[NaN]", "invalid JSON: at byte 1");
      ("{a: 1}", "invalid JSON: at byte 1");
      ("(1, 2)", "invalid JSON: at byte 0");
      ("\"\xff\"", "invalid JSON: at byte 1");
      (deep 513, "invalid JSON: at byte 512: nested more than 512 deep");
      ("", "invalid JSON: empty document");
    ];
  Alcotest.(check int) "512 deep" 201 (post (deep 512)).status

let () =
  Alcotest.run "json"
    [
      ( "refused",
        [
          Alcotest.test_case "comments, tuples, variants" `Quick extensions;
          Alcotest.test_case "NaN, Infinity, other words" `Quick constants;
          Alcotest.test_case "object keys" `Quick keys;
          Alcotest.test_case "arrays" `Quick arrays;
          Alcotest.test_case "numbers" `Quick numbers;
          Alcotest.test_case "strings" `Quick strings;
          Alcotest.test_case "lone surrogates" `Quick surrogates;
          Alcotest.test_case "UTF-8" `Quick utf_8;
          Alcotest.test_case "whitespace" `Quick whitespace;
          Alcotest.test_case "trailing bytes" `Quick documents;
          Alcotest.test_case "empty" `Quick empty;
        ] );
      ( "depth",
        [
          Alcotest.test_case "512 yes, 513 no" `Quick depth;
          Alcotest.test_case "issue 39's bypass" `Quick bypass;
        ] );
      ( "accepted",
        [ Alcotest.test_case "values and round trips" `Quick round_trip ] );
      ( "Json.body",
        [ Alcotest.test_case "through the server" `Quick through_server ] );
    ]
