(* Near-valid JSON texts drawn from a seed. Most are RFC 8259 documents;
   tokens are swapped for invalid ones (yojson's extensions, NaN, unquoted
   keys, numbers and escapes outside the grammar, bad UTF-8, control
   characters, other whitespace) often enough that every class of error
   turns up, and then a few bytes may be mutated and the text cut short. *)

let one rng l = List.nth l (Random.State.int rng (List.length l))
let chance rng p = Random.State.float rng 1. < p
let int rng n = Random.State.int rng n

let digits rng n =
  String.init n (fun i ->
      Char.chr (48 + if i = 0 then 1 + int rng 9 else int rng 10))

let valid_number rng =
  let sign = if chance rng 0.3 then "-" else "" in
  let whole =
    if chance rng 0.2 then "0"
    else if chance rng 0.1 then digits rng (15 + int rng 25)
    else digits rng (1 + int rng 6)
  in
  let frac =
    if chance rng 0.3 then
      "." ^ String.init (1 + int rng 20) (fun _ -> Char.chr (48 + int rng 10))
    else ""
  in
  let exp =
    if chance rng 0.2 then
      one rng [ "e"; "E" ]
      ^ one rng [ ""; "+"; "-" ]
      ^ string_of_int (if chance rng 0.2 then 290 + int rng 150 else int rng 30)
    else ""
  in
  sign ^ whole ^ frac ^ exp

let invalid_number rng =
  one rng
    [
      "+1";
      "01";
      "-01";
      "00";
      ".5";
      "1.";
      "1.e5";
      "1e";
      "1e+";
      "0x1F";
      "-";
      "--1";
      "1_000";
      "NaN";
      "Infinity";
      "-Infinity";
      "nan";
      "inf";
      "1.5f";
      "0.0.1";
      "1e5.5";
      "\xd9\xa3";
    ]

let number rng = if chance rng 0.9 then valid_number rng else invalid_number rng

(* A code point as UTF-8, for raw bytes in strings. *)
let utf_8 cp =
  let b = Buffer.create 4 in
  Buffer.add_utf_8_uchar b (Uchar.of_int cp);
  Buffer.contents b

let code_point rng =
  match int rng 5 with
  | 0 -> 0x80 + int rng 0x780
  | 1 -> 0x800 + int rng (0xD800 - 0x800)
  | 2 -> 0xE000 + int rng 0x2000
  | 3 -> 0x10000 + int rng 0x100000
  | _ -> one rng [ 0xE9; 0x20AC; 0xFFFD; 0xFEFF; 0xFFFF; 0x10FFFF; 0x1F600 ]

let bad_utf_8 rng =
  one rng
    [
      "\x80";
      "\xbf";
      "\xc0\x80";
      "\xc1\xbf";
      "\xc3";
      "\xe0\x80\x80";
      "\xe0\x9f\xbf";
      "\xed\xa0\x80";
      "\xed\xbf\xbf";
      "\xe2\x82";
      "\xf0\x80\x80\x80";
      "\xf0\x8f\xbf\xbf";
      "\xf4\x90\x80\x80";
      "\xf5\x80\x80\x80";
      "\xf8\x88\x80\x80\x80";
      "\xfe";
      "\xff";
      "\xf0\x9f\x98";
    ]

let u rng lo hi = Printf.sprintf "\\u%04X" (lo + int rng (hi - lo + 1))

let escape rng =
  match int rng 10 with
  | 0 | 1 ->
      one rng [ {|\"|}; {|\\|}; {|\/|}; {|\b|}; {|\f|}; {|\n|}; {|\r|}; {|\t|} ]
  | 2 | 3 -> u rng 0 0xD7FF
  | 4 -> u rng 0xE000 0xFFFF
  (* A surrogate pair, written in either case. *)
  | 5 | 6 ->
      let p = u rng 0xD800 0xDBFF ^ u rng 0xDC00 0xDFFF in
      if chance rng 0.5 then String.lowercase_ascii p else p
  (* Lone surrogates, which Python accepts and the reader refuses. *)
  | 7 -> u rng 0xD800 0xDFFF
  | 8 -> u rng 0xDC00 0xDFFF ^ u rng 0xD800 0xDBFF
  | _ ->
      one rng
        [
          {|\x41|};
          {|\a|};
          {|\'|};
          {|\U0041|};
          {|\u12|};
          {|\u12G4|};
          "\\";
          {|\0|};
        ]

let string_body rng =
  let piece () =
    match int rng 20 with
    | 0 | 1 | 2 | 3 | 4 | 5 | 6 ->
        String.init (1 + int rng 8) (fun _ -> Char.chr (97 + int rng 26))
    | 7 | 8 | 9 | 10 -> escape rng
    | 11 | 12 | 13 -> utf_8 (code_point rng)
    | 14 -> " "
    | 15 -> "\x7f"
    | 16 -> if chance rng 0.3 then bad_utf_8 rng else "x"
    | 17 ->
        if chance rng 0.3 then String.make 1 (Char.chr (int rng 32)) else "y"
    | _ -> ""
  in
  String.concat "" (List.init (int rng 6) (fun _ -> piece ()))

let string rng =
  if chance rng 0.97 then "\"" ^ string_body rng ^ "\""
  else one rng [ "'" ^ string_body rng ^ "'"; "\"" ^ string_body rng ]

let ws rng =
  if chance rng 0.6 then ""
  else if chance rng 0.9 then one rng [ " "; "\n"; "\t"; "\r\n"; "  \n  " ]
  else
    one rng
      [
        "\x0c"; "\x0b"; "\xc2\xa0"; "\xef\xbb\xbf"; "/* c */"; "// c\n"; "# c\n";
      ]

let comma rng = if chance rng 0.97 then "," else one rng [ ""; ",,"; ";"; " " ]

let key rng =
  if chance rng 0.95 then string rng
  else one rng [ "a"; "'a'"; "1"; "true"; "null"; "[]" ]

let rec value rng depth =
  let w () = ws rng in
  if depth <= 0 || chance rng 0.4 then
    match int rng 10 with
    | 0 | 1 | 2 -> number rng
    | 3 | 4 | 5 -> string rng
    | 6 -> one rng [ "true"; "false"; "null" ]
    | 7 -> if chance rng 0.8 then "[]" else "{}"
    | 8 ->
        if chance rng 0.9 then number rng
        else one rng [ "True"; "nul"; "undefined" ]
    | _ ->
        if chance rng 0.95 then string rng
        else one rng [ "(1, 2)"; {|<"A">|}; {|<"A": 1>|} ]
  else
    let n = int rng 5 in
    let items f =
      String.concat ""
        (List.init n (fun i ->
             (if i > 0 then comma rng else "") ^ w () ^ f () ^ w ()))
    in
    let trailing () = if n > 0 && chance rng 0.03 then "," else "" in
    if chance rng 0.5 then
      "[" ^ items (fun () -> value rng (depth - 1)) ^ trailing () ^ "]"
    else
      "{"
      ^ items (fun () ->
            key rng ^ w ()
            ^ (if chance rng 0.98 then ":" else "=")
            ^ w ()
            ^ value rng (depth - 1))
      ^ trailing () ^ "}"

(* Nested around 512 deep, both sides of the limit. *)
let deep rng =
  let n = 500 + int rng 25 in
  let opens, closes =
    List.split
      (List.init n (fun _ ->
           if chance rng 0.7 then ("[", "]") else ({|{"k":|}, "}")))
  in
  String.concat "" opens ^ value rng 1 ^ String.concat "" (List.rev closes)

let mutate rng s =
  let interesting () =
    one rng
      [
        '"';
        '\\';
        '[';
        ']';
        '{';
        '}';
        ',';
        ':';
        '0';
        '-';
        'e';
        '.';
        ' ';
        '\000';
        '\n';
        '\xc3';
        '\x80';
        '\xff';
        '/';
        '*';
        'u';
      ]
  in
  let s = ref s in
  for _ = 1 to 1 + int rng 3 do
    let n = String.length !s in
    if n > 0 then
      let i = int rng n in
      s :=
        match int rng 3 with
        | 0 -> String.mapi (fun j c -> if j = i then interesting () else c) !s
        | 1 ->
            String.sub !s 0 i
            ^ String.make 1 (interesting ())
            ^ String.sub !s i (n - i)
        | _ -> String.sub !s 0 i ^ String.sub !s (i + 1) (n - i - 1)
  done;
  !s

let document seed =
  let rng = Random.State.make [| seed |] in
  let s =
    if chance rng 0.03 then deep rng
    else ws rng ^ value rng (int rng 6) ^ ws rng
  in
  let s = if chance rng 0.15 then mutate rng s else s in
  if chance rng 0.05 then String.sub s 0 (int rng (String.length s + 1)) else s

(* The bodies of issue 39, and other documents nested past the limit. *)
let bypasses =
  let deep n = String.make n '[' ^ String.make n ']' in
  [
    {|/*"*/|} ^ String.make 499_000 '[';
    {|/*"*/|} ^ String.concat "" (List.init 499_000 (fun _ -> "[ "));
    {|/*"*/|} ^ deep 1000;
    "//\"\n" ^ deep 1000;
    String.make 1_000_000 '[';
    deep 512;
    deep 513;
    "[" ^ deep 511 ^ "," ^ deep 511 ^ "]";
  ]
