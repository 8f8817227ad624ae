let is_json = function
  | None -> true
  | Some "application/json" -> true
  | Some t -> String.ends_with ~suffix:"+json" t

let max_depth = 512

(* {1 The reader}

   Strict RFC 8259, written here rather than borrowed from yojson: yojson's
   reader accepts comments, tuples, variants, NaN, unquoted keys and any
   bytes in strings, and recurses once per level of nesting, so a depth limit
   had to be a separate scan of the body, which a comment could fool (issue
   39). This one refuses all of that and counts the depth as it descends: a
   document nested too deep is refused at the first bracket too many, having
   read at most [max_depth] of them.

   The parser is iterative: the containers being read are a list ([stack]),
   and [value] and [close] call each other only in tail position, so neither
   the nesting nor the length of the input grows OCaml's stack. *)

(* Raised at the first error with its byte offset; [of_string] turns it into
   its [Error], and nothing else can raise it. *)
exception Invalid of int * string

type frame =
  | In_list of Yojson.Safe.t list  (** The items read so far, reversed. *)
  | In_object of (string * Yojson.Safe.t) list * string
      (** The members read so far, reversed, and the key whose value is being
          read. *)

let describe c =
  if c >= ' ' && c <= '~' then Printf.sprintf "'%c'" c
  else Printf.sprintf "byte 0x%02X" (Char.code c)

let is_digit c = c >= '0' && c <= '9'

let hex_value = function
  | '0' .. '9' as c -> Char.code c - 48
  | 'a' .. 'f' as c -> Char.code c - 87
  | 'A' .. 'F' as c -> Char.code c - 55
  | _ -> -1

let of_string ?(max_depth = max_depth) s =
  let n = String.length s in
  let fail i what = raise_notrace (Invalid (i, what)) in
  let byte i = if i < n then Char.code (String.unsafe_get s i) else -1 in
  let rec skip i =
    if i < n then
      match String.unsafe_get s i with
      | ' ' | '\t' | '\n' | '\r' -> skip (i + 1)
      | _ -> i
    else i
  in
  let hex4 i =
    if i + 4 > n then fail i "truncated \\u escape";
    let v = ref 0 in
    for j = i to i + 3 do
      let h = hex_value (String.unsafe_get s j) in
      if h < 0 then fail j "expected a hexadecimal digit in a \\u escape";
      v := (!v lsl 4) lor h
    done;
    !v
  in
  (* The escape at [i] (a backslash), added to [b]: the offset after it. *)
  let escape b i =
    if i + 1 >= n then fail i "unterminated string";
    match String.unsafe_get s (i + 1) with
    | ('"' | '\\' | '/') as c ->
        Buffer.add_char b c;
        i + 2
    | 'b' ->
        Buffer.add_char b '\b';
        i + 2
    | 'f' ->
        Buffer.add_char b '\012';
        i + 2
    | 'n' ->
        Buffer.add_char b '\n';
        i + 2
    | 'r' ->
        Buffer.add_char b '\r';
        i + 2
    | 't' ->
        Buffer.add_char b '\t';
        i + 2
    | 'u' ->
        let cp = hex4 (i + 2) in
        if cp >= 0xD800 && cp <= 0xDBFF then
          (* A UTF-8 string cannot hold a lone surrogate: the high one must
             be followed by the escape of a low one. *)
          let lone () =
            fail i
              "lone surrogate: \\uD800-\\uDBFF not followed by \\uDC00-\\uDFFF"
          in
          if byte (i + 6) = Char.code '\\' && byte (i + 7) = Char.code 'u' then (
            let lo = hex4 (i + 8) in
            if lo < 0xDC00 || lo > 0xDFFF then lone ();
            Buffer.add_utf_8_uchar b
              (Uchar.of_int (0x10000 + ((cp - 0xD800) lsl 10) + (lo - 0xDC00)));
            i + 12)
          else lone ()
        else if cp >= 0xDC00 && cp <= 0xDFFF then
          fail i
            "lone surrogate: \\uDC00-\\uDFFF not preceded by \\uD800-\\uDBFF"
        else (
          Buffer.add_utf_8_uchar b (Uchar.of_int cp);
          i + 6)
    | c -> fail i ("invalid escape: a backslash then " ^ describe c)
  in
  let buffer = Buffer.create 64 in
  (* The string whose opening quote is at [start]: its contents and the
     offset after its closing quote. Runs without escapes are copied whole. *)
  let string start =
    let escaped = ref false in
    let rec go run i =
      if i >= n then fail start "unterminated string"
      else
        match String.unsafe_get s i with
        | '"' ->
            let v =
              if !escaped then (
                Buffer.add_substring buffer s run (i - run);
                Buffer.contents buffer)
              else String.sub s run (i - run)
            in
            (v, i + 1)
        | '\\' ->
            if not !escaped then (
              Buffer.clear buffer;
              escaped := true);
            Buffer.add_substring buffer s run (i - run);
            let j = escape buffer i in
            go j j
        | c when c < ' ' ->
            fail i
              (Printf.sprintf "control character U+%04X in a string (escape it)"
                 (Char.code c))
        | c when c < '\128' -> go run (i + 1)
        | _ ->
            (* RFC 3629 as the Stdlib checks it: no overlong forms, no
               surrogates, nothing above U+10FFFF. *)
            let d = String.get_utf_8_uchar s i in
            if Uchar.utf_decode_is_valid d then
              go run (i + Uchar.utf_decode_length d)
            else fail i "invalid UTF-8 in a string"
    in
    go (start + 1) (start + 1)
  in
  let digits i =
    let rec go i =
      if i < n && is_digit (String.unsafe_get s i) then go (i + 1) else i
    in
    if i < n && is_digit (String.unsafe_get s i) then go (i + 1)
    else if i < n then fail i ("expected a digit, found " ^ describe s.[i])
    else fail i "expected a digit, found the end"
  in
  (* RFC 8259 section 6: an optional minus, 0 or digits not starting with 0,
     optionally a dot and digits, optionally e or E, an optional sign and
     digits. *)
  let number start =
    let i = if s.[start] = '-' then start + 1 else start in
    let i =
      if i < n && s.[i] = '0' then
        if i + 1 < n && is_digit s.[i + 1] then
          fail i "leading zero in a number"
        else i + 1
      else digits i
    in
    let i, integral =
      if i < n && s.[i] = '.' then (digits (i + 1), false) else (i, true)
    in
    let i, integral =
      if i < n && (s.[i] = 'e' || s.[i] = 'E') then
        let j =
          if i + 1 < n && (s.[i + 1] = '+' || s.[i + 1] = '-') then i + 2
          else i + 1
        in
        (digits j, false)
      else (i, integral)
    in
    let literal = String.sub s start (i - start) in
    let v =
      if integral then
        match int_of_string_opt literal with
        | Some k -> `Int k
        | None -> `Intlit literal
      else
        let f = float_of_string literal in
        if Float.is_finite f then `Float f
        else fail start "number too large for a float"
    in
    (v, i)
  in
  let literal i word v =
    let l = String.length word in
    if i + l <= n && String.sub s i l = word then (v, i + l)
    else fail i ("expected a value, found " ^ describe s.[i])
  in
  let too_deep i =
    fail i (Printf.sprintf "nested more than %d deep" max_depth)
  in
  (* An object's key from [i] (whitespace allowed before it and before the
     colon): the key and the offset after the colon. *)
  let key i =
    let i = skip i in
    if i >= n then fail i "expected '\"' starting an object key, found the end"
    else if s.[i] <> '"' then
      fail i ("expected '\"' starting an object key, found " ^ describe s.[i])
    else
      let k, i = string i in
      let i = skip i in
      if i < n && s.[i] = ':' then (k, i + 1)
      else if i < n then fail i ("expected ':', found " ^ describe s.[i])
      else fail i "expected ':', found the end"
  in
  (* The value starting at [i] (or after whitespace), inside the containers
     of [stack], [depth] of them. *)
  let rec value i stack depth =
    let i = skip i in
    if i >= n then fail i "expected a value, found the end"
    else
      match String.unsafe_get s i with
      | '[' ->
          if depth >= max_depth then too_deep i;
          let j = skip (i + 1) in
          if j < n && s.[j] = ']' then close (j + 1) (`List []) stack depth
          else value j (In_list [] :: stack) (depth + 1)
      | '{' ->
          if depth >= max_depth then too_deep i;
          let j = skip (i + 1) in
          if j < n && s.[j] = '}' then close (j + 1) (`Assoc []) stack depth
          else
            let k, j = key j in
            value j (In_object ([], k) :: stack) (depth + 1)
      | '"' ->
          let v, j = string i in
          close j (`String v) stack depth
      | '-' | '0' .. '9' ->
          let v, j = number i in
          close j v stack depth
      | 't' ->
          let v, j = literal i "true" (`Bool true) in
          close j v stack depth
      | 'f' ->
          let v, j = literal i "false" (`Bool false) in
          close j v stack depth
      | 'n' ->
          let v, j = literal i "null" `Null in
          close j v stack depth
      | c -> fail i ("expected a value, found " ^ describe c)
  (* [v] has been read, ending before [i]: it ends the document or goes into
     the innermost container. *)
  and close i v stack depth =
    let i = skip i in
    match stack with
    | [] ->
        if i < n then
          fail i ("trailing " ^ describe s.[i] ^ " after the document")
        else v
    | In_list items :: rest -> (
        if i >= n then fail i "expected ',' or ']', found the end"
        else
          match s.[i] with
          | ',' -> value (i + 1) (In_list (v :: items) :: rest) depth
          | ']' -> close (i + 1) (`List (List.rev (v :: items))) rest (depth - 1)
          | c -> fail i ("expected ',' or ']', found " ^ describe c))
    | In_object (members, k) :: rest -> (
        if i >= n then fail i "expected ',' or '}', found the end"
        else
          match s.[i] with
          | ',' ->
              let k', j = key (i + 1) in
              value j (In_object ((k, v) :: members, k') :: rest) depth
          | '}' ->
              close (i + 1)
                (`Assoc (List.rev ((k, v) :: members)))
                rest (depth - 1)
          | c -> fail i ("expected ',' or '}', found " ^ describe c))
  in
  match value 0 [] 0 with
  | v -> Ok v
  | exception Invalid (i, what) ->
      if skip 0 = n then Error "empty document"
      else Error (Printf.sprintf "at byte %d: %s" i what)

let body (r : Handler.request) =
  if not (is_json (Form.media_type r)) then
    Error (Response.error 415 "expected Content-Type: application/json")
  else
    match Handler.body_string r with
    | Error e -> Error (Handler.bad_request e)
    | Ok s -> (
        match of_string s with
        | Ok json -> Ok json
        | Error why -> Error (Response.error 400 ("invalid JSON: " ^ why)))

let response ?status ?headers json =
  Response.string ?status ?headers ~content_type:"application/json"
    (Yojson.Safe.to_string json)
