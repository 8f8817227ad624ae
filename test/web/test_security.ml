open Braid_web

let hex s =
  String.concat ""
    (List.map (Printf.sprintf "%02x")
       (List.map Char.code (List.of_seq (String.to_seq s))))

let check_string = Alcotest.(check string)
let check_bool = Alcotest.(check bool)

(* Runs python3 with [args]; its standard output, trimmed. *)
let python script args =
  let ic =
    Unix.open_process_args_in "python3"
      (Array.of_list ("python3" :: "-c" :: script :: args))
  in
  let out = In_channel.input_all ic in
  (match Unix.close_process_in ic with
  | Unix.WEXITED 0 -> ()
  | _ -> Alcotest.fail "python3 failed");
  String.trim out

(* {1 Tokens} *)

let token_shape () =
  let t = Token.generate () in
  Alcotest.(check int) "32 bytes: 43 characters" 43 (String.length t);
  check_bool "URL-safe alphabet, no padding" true
    (String.for_all
       (function
         | 'a' .. 'z' | 'A' .. 'Z' | '0' .. '9' | '-' | '_' -> true | _ -> false)
       t);
  Alcotest.(check int)
    "16 bytes" 22
    (String.length (Token.generate ~bytes:16 ()));
  (* Python's decoder, independent of ours, reads back 32 bytes. *)
  check_string "Python decodes it" "32"
    (python
       "import base64,sys; t=sys.argv[1]; print(len(base64.urlsafe_b64decode(t \
        + '=' * (-len(t) % 4))))"
       [ t ]);
  (match Token.generate ~bytes:8 () with
  | _ -> Alcotest.fail "8 bytes accepted"
  | exception Invalid_argument _ -> ());
  Alcotest.(check int) "random_bytes 0" 0 (String.length (Token.random_bytes 0));
  (* Longer than one getrandom call of 256 bytes is guaranteed to fill. *)
  Alcotest.(check int)
    "random_bytes 100_000" 100_000
    (String.length (Token.random_bytes 100_000))

let token_random () =
  let n = 1000 in
  let seen = Hashtbl.create n in
  for _ = 1 to n do
    Hashtbl.replace seen (Token.generate ~bytes:16 ()) ()
  done;
  Alcotest.(check int) "no repeat in 1000" n (Hashtbl.length seen);
  (* Every byte value turns up in 64 KiB: a stub that filled only part of
     the buffer, or a constant, would fail. *)
  let b = Token.random_bytes 65536 in
  let counts = Array.make 256 0 in
  String.iter (fun c -> counts.(Char.code c) <- counts.(Char.code c) + 1) b;
  check_bool "every byte value" true (Array.for_all (fun c -> c > 100) counts)

let token_from_domains () =
  let ds =
    List.init 4 (fun _ ->
        Domain.spawn (fun () -> List.init 100 (fun _ -> Token.generate ())))
  in
  let all = List.concat_map Domain.join ds in
  Alcotest.(check int)
    "distinct across domains" 400
    (List.length (List.sort_uniq compare all))

let token_equal () =
  check_bool "equal" true (Token.equal "abc" "abc");
  check_bool "empty" true (Token.equal "" "");
  check_bool "last byte" false (Token.equal "abc" "abd");
  check_bool "first byte" false (Token.equal "xbc" "abc");
  check_bool "prefix" false (Token.equal "ab" "abc");
  check_bool "high bit" false (Token.equal "\x80" "\x00")

(* {1 HMAC-SHA256} *)

(* RFC 4231 §4.2-4.8 (4.6, a truncated MAC, aside). *)
let rfc4231 =
  [
    ( String.make 20 '\x0b',
      "Hi There",
      "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" );
    ( "Jefe",
      "what do ya want for nothing?",
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" );
    ( String.make 20 '\xaa',
      String.make 50 '\xdd',
      "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" );
    ( String.init 25 (fun i -> Char.chr (i + 1)),
      String.make 50 '\xcd',
      "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" );
    ( String.make 131 '\xaa',
      "Test Using Larger Than Block-Size Key - Hash Key First",
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" );
    ( String.make 131 '\xaa',
      "This is a test using a larger than block-size key and a larger than \
       block-size data. The key needs to be hashed before being used by the \
       HMAC algorithm.",
      "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" );
  ]

let hmac_rfc4231 () =
  List.iteri
    (fun i (key, data, mac) ->
      check_string
        (Printf.sprintf "RFC 4231 case %d" (i + 1))
        mac
        (hex (Signed.hmac_sha256 ~key data)))
    rfc4231

(* Random keys and messages of every length around the 64-byte block,
   against Python's hmac module. *)
let hmac_python () =
  let cases =
    List.concat_map
      (fun klen ->
        List.map
          (fun mlen -> (Token.random_bytes klen, Token.random_bytes mlen))
          [ 0; 1; 55; 56; 63; 64; 65; 1000 ])
      [ 0; 1; 32; 63; 64; 65; 200 ]
  in
  let args = List.concat_map (fun (k, m) -> [ hex k; hex m ]) cases in
  let out =
    python
      "import hmac,hashlib,sys\n\
       a=sys.argv[1:]\n\
       for i in range(0,len(a),2): \
       print(hmac.new(bytes.fromhex(a[i]),bytes.fromhex(a[i+1]),hashlib.sha256).hexdigest())"
      args
  in
  let expected = String.split_on_char '\n' out in
  Alcotest.(check int) "cases" (List.length cases) (List.length expected);
  List.iter2
    (fun (key, m) e ->
      check_string
        (Printf.sprintf "key %d, message %d bytes" (String.length key)
           (String.length m))
        e
        (hex (Signed.hmac_sha256 ~key m)))
    cases expected

(* {1 Signed values} *)

let k1 = String.make 32 'a'
let k2 = String.make 32 'b'

let signed_round_trip () =
  let keys = Signed.keys [ k1 ] in
  List.iter
    (fun v ->
      let s = Signed.sign keys ~name:"n" v in
      check_bool "cookie-octets" true
        (String.for_all
           (function
             | 'a' .. 'z' | 'A' .. 'Z' | '0' .. '9' | '-' | '_' | '.' -> true
             | _ -> false)
           s);
      Alcotest.(check (result string reject))
        v (Ok v)
        (Signed.verify keys ~name:"n" s))
    [ ""; "ada"; "a.b.c"; "x; y=\"z\"\r\n"; String.init 256 Char.chr ]

let signed_format () =
  (* The format, by Python: BASE64URL(value) "." BASE64URL(HMAC(key,
     label NUL len ":" name value)). *)
  let s = Signed.sign (Signed.keys [ k1 ]) ~name:"user" "ada" in
  check_string "as Python computes it" s
    (python
       "import hmac,hashlib,base64,sys\n\
        k,n,v=sys.argv[1].encode(),sys.argv[2].encode(),sys.argv[3].encode()\n\
        m=hmac.new(k,b'braid-signed-v1\\0'+str(len(n)).encode()+b':'+n+v,hashlib.sha256).digest()\n\
        b=lambda x: base64.urlsafe_b64encode(x).rstrip(b'=').decode()\n\
        print(b(v)+'.'+b(m))"
       [ k1; "user"; "ada" ])

let error =
  Alcotest.testable
    (fun ppf -> function
      | Signed.Not_signed -> Format.pp_print_string ppf "Not_signed"
      | Tampered -> Format.pp_print_string ppf "Tampered")
    ( = )

let verdict = Alcotest.(result string error)

let signed_refused () =
  let keys = Signed.keys [ k1 ] in
  let s = Signed.sign keys ~name:"user" "ada" in
  Alcotest.check verdict "other name" (Error Tampered)
    (Signed.verify keys ~name:"admin" s);
  Alcotest.check verdict "other key" (Error Tampered)
    (Signed.verify (Signed.keys [ k2 ]) ~name:"user" s);
  let forged = Signed.sign (Signed.keys [ k2 ]) ~name:"user" "root" in
  Alcotest.check verdict "forged" (Error Tampered)
    (Signed.verify keys ~name:"user" forged);
  let i = String.index s '.' in
  let swapped = "cm9vdA" ^ String.sub s i (String.length s - i) in
  Alcotest.check verdict "value changed" (Error Tampered)
    (Signed.verify keys ~name:"user" swapped);
  (* Flip each character of the MAC in turn. *)
  for j = i + 1 to String.length s - 1 do
    let b = Bytes.of_string s in
    Bytes.set b j (if s.[j] = 'A' then 'B' else 'A');
    match Signed.verify keys ~name:"user" (Bytes.to_string b) with
    | Ok _ -> Alcotest.failf "MAC byte %d changed: accepted" j
    | Error _ -> ()
  done;
  List.iter
    (fun bad ->
      Alcotest.check verdict bad (Error Not_signed)
        (Signed.verify keys ~name:"user" bad))
    [
      "";
      "ada";
      "YWRh";
      "YWRh.";
      "YWRh.AAAA";
      "!!.!!";
      String.sub s 0 (String.length s - 2);
    ];
  (* The last character of a 32-byte MAC carries two spare bits: a text
     that differs only there decodes to the same MAC, and must be refused
     all the same (one signed text per value). *)
  let alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
  in
  let last = String.length s - 1 in
  let spare = String.make 1 alphabet.[String.index alphabet s.[last] lxor 1] in
  (match Signed.verify keys ~name:"user" (String.sub s 0 last ^ spare) with
  | Ok _ -> Alcotest.fail "a MAC differing in its spare bits: accepted"
  | Error _ -> ());
  (* "name"+"1x" and "name1"+"x" would collide without the length prefix. *)
  let a = Signed.sign keys ~name:"n" "1x" in
  let mac s =
    let i = String.index s '.' in
    String.sub s i (String.length s - i)
  in
  let b = Signed.sign keys ~name:"n1" "x" in
  check_bool "name/value boundary" false (mac a = mac b)

let signed_rotation () =
  let old = Signed.keys [ k1 ] and rotated = Signed.keys [ k2; k1 ] in
  let s_old = Signed.sign old ~name:"n" "v" in
  Alcotest.check verdict "old value, rotated keys" (Ok "v")
    (Signed.verify rotated ~name:"n" s_old);
  let s_new = Signed.sign rotated ~name:"n" "v" in
  check_bool "signs with the first" true
    (s_new = Signed.sign (Signed.keys [ k2 ]) ~name:"n" "v");
  Alcotest.check verdict "new value, old keys" (Error Tampered)
    (Signed.verify old ~name:"n" s_new);
  List.iter
    (fun (what, l) ->
      match Signed.keys l with
      | _ -> Alcotest.failf "%s accepted" what
      | exception Invalid_argument _ -> ())
    [ ("no key", []); ("short key", [ k1; "short" ]) ]

(* {1 Signed cookies} *)

let signed_cookie () =
  let keys = Signed.keys [ k1 ] in
  let r = Cookie.set_signed ~keys "user" "ada" (Response.string "hi") in
  let field = Option.get (Response.header r "Set-Cookie") in
  let value = List.hd (String.split_on_char ';' field) in
  check_string "secure defaults"
    (value ^ "; Path=/; Secure; HttpOnly; SameSite=Lax")
    field;
  check_string "development"
    (value ^ "; Path=/; HttpOnly; SameSite=Lax")
    (Option.get
       (Response.header
          (Cookie.set_signed ~keys ~secure:false "user" "ada"
             (Response.string ""))
          "Set-Cookie"));
  let get cookie =
    let headers =
      Option.fold ~none:[] ~some:(fun c -> [ ("Cookie", c) ]) cookie
    in
    Cookie.get_signed ~keys (Handler.request_for_test ~headers "/") "user"
  in
  let is what expected got =
    match (expected, got) with
    | `Valid v, Ok (Cookie.Valid v') -> check_string what v v'
    | `Absent, Ok Cookie.Absent
    | `Not_signed, Ok (Cookie.Invalid Not_signed)
    | `Tampered, Ok (Cookie.Invalid Tampered) ->
        ()
    | `Bad, Error r -> Alcotest.(check int) what 400 r.Response.status
    | _ -> Alcotest.failf "%s: unexpected" what
  in
  is "round trip" (`Valid "ada") (get (Some ("theme=x; " ^ value)));
  is "absent" `Absent (get None);
  is "absent among others" `Absent (get (Some "theme=x"));
  is "unsigned" `Not_signed (get (Some "user=ada"));
  is "moved to another name" `Tampered
    (Cookie.get_signed ~keys
       (Handler.request_for_test
          ~headers:
            [
              ("Cookie", "admin" ^ String.sub value 4 (String.length value - 4));
            ]
          "/")
       "admin");
  is "malformed field" `Bad (get (Some "a b=1"))

(* {1 HTML} *)

let html_escape () =
  check_string "all five"
    "&lt;a href=&quot;x&quot; title=&#x27;y&#x27;&gt;&amp;amp;"
    (Html.escape "<a href=\"x\" title='y'>&amp;");
  check_string "plain" "caf\xc3\xa9 ok" (Html.escape "caf\xc3\xa9 ok");
  check_string "empty" "" (Html.escape "");
  (* Python's html.escape(quote=True) escapes the same five; it writes
     &#x27; for the single quote too. *)
  let s = String.init 128 Char.chr ^ "\xc3\xa9<script>alert('x')</script>" in
  check_string "as Python's html.escape"
    (hex (Html.escape s))
    (python
       "import html,sys; s=bytes.fromhex(sys.argv[1]).decode('latin-1'); \
        print(html.escape(s).encode('latin-1').hex())"
       [ hex s ])

let html_attribute () =
  check_string "alnum untouched" "abcXYZ019" (Html.attribute "abcXYZ019");
  check_string "the rest as &#xHH;" "a&#x20;b&#x3D;&#x60;x&#x60;&#x3E;"
    (Html.attribute "a b=`x`>");
  check_string "UTF-8 kept" "caf\xc3\xa9" (Html.attribute "caf\xc3\xa9");
  (* What a browser would decode: Python's html.unescape (HTML5's rules)
     gets printable ASCII back. Control characters are not representable as
     references in HTML5 (a browser drops or replaces them): harmless. *)
  let s = String.init 95 (fun i -> Char.chr (i + 0x20)) in
  check_string "Python unescapes it back" (hex s)
    (python
       "import html,sys; \
        print(html.unescape(sys.argv[1]).encode('latin-1').hex())"
       [ Html.attribute s ])

let () =
  Alcotest.run "security"
    [
      ( "token",
        [
          Alcotest.test_case "shape" `Quick token_shape;
          Alcotest.test_case "random" `Quick token_random;
          Alcotest.test_case "from domains" `Quick token_from_domains;
          Alcotest.test_case "equal" `Quick token_equal;
        ] );
      ( "hmac",
        [
          Alcotest.test_case "RFC 4231" `Quick hmac_rfc4231;
          Alcotest.test_case "Python hmac" `Quick hmac_python;
        ] );
      ( "signed",
        [
          Alcotest.test_case "round trip" `Quick signed_round_trip;
          Alcotest.test_case "format" `Quick signed_format;
          Alcotest.test_case "refused" `Quick signed_refused;
          Alcotest.test_case "rotation" `Quick signed_rotation;
          Alcotest.test_case "cookie" `Quick signed_cookie;
        ] );
      ( "html",
        [
          Alcotest.test_case "escape" `Quick html_escape;
          Alcotest.test_case "attribute" `Quick html_attribute;
        ] );
    ]
