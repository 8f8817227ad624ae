(* The first [c] in [s] from [i], or [stop]: a word at a time (paths are
   scanned several times per request: for "?", "%", "/"). *)
let rec index_byte_bytes s i stop c =
  if i >= stop || String.unsafe_get s i = c then i
  else index_byte_bytes s (i + 1) stop c

(* The pattern is made from [c] at each word, in registers: passed as an
   argument, an [int64] would be boxed, an allocation per call. *)
let rec index_byte s i stop c =
  if i + 8 <= stop then
    let found = Word.equal (Word.of_string s i) (Word.repeat c) in
    if found = 0L then index_byte s (i + 8) stop c
    else if Sys.big_endian then index_byte_bytes s i (i + 8) c
    else i + Word.first found
  else index_byte_bytes s i stop c

let split_target target =
  let path_and_query s =
    let n = String.length s in
    match index_byte s 0 n '?' with
    | i when i = n -> (s, None)
    | i -> (String.sub s 0 i, Some (String.sub s (i + 1) (n - i - 1)))
  in
  let n = String.length target in
  if n > 0 && target.[0] = '/' then path_and_query target
  else
    (* absolute-form: scheme "://" authority path-abempty [ "?" query ] *)
    match String.index_opt target ':' with
    | Some i when i + 2 < n && target.[i + 1] = '/' && target.[i + 2] = '/' -> (
        let authority = i + 3 in
        let rec path_start j =
          if j >= n || target.[j] = '/' || target.[j] = '?' then j
          else path_start (j + 1)
        in
        let p = path_start authority in
        let path, query = path_and_query (String.sub target p (n - p)) in
        match path with "" -> ("/", query) | _ -> (path, query))
    | _ -> (target, None)

type error =
  | Bad_escape
  | Encoded_slash
  | Nul_byte
  | Escapes_root
  | Not_absolute

let error_to_string = function
  | Bad_escape -> "bad percent-encoding in path"
  | Encoded_slash -> "encoded slash in path"
  | Nul_byte -> "NUL byte in path"
  | Escapes_root -> "path escapes the root"
  | Not_absolute -> "path is not absolute"

let hex c =
  match c with
  | '0' .. '9' -> Char.code c - 48
  | 'a' .. 'f' -> Char.code c - 87
  | 'A' .. 'F' -> Char.code c - 55
  | _ -> -1

exception Bad

let has_percent s i stop = index_byte s i stop '%' < stop

(* [s.[off] .. s.[stop - 1]] decoded. *)
let decode_range s off stop =
  if not (has_percent s off stop) then String.sub s off (stop - off)
  else
    let b = Buffer.create (stop - off) in
    let rec go i =
      if i < stop then
        if s.[i] <> '%' then (
          Buffer.add_char b s.[i];
          go (i + 1))
        else if i + 2 >= stop then raise Bad
        else
          let h = hex s.[i + 1] and l = hex s.[i + 2] in
          if h < 0 || l < 0 then raise Bad
          else (
            Buffer.add_char b (Char.chr ((h * 16) + l));
            go (i + 3))
    in
    go off;
    Buffer.contents b

let percent_decode s =
  match decode_range s 0 (String.length s) with
  | d -> Ok d
  | exception Bad -> Error Bad_escape

(* {1 Dot-segments} *)

(* [path.[i..j-1]] is "." or "..", with either dot possibly as %2e/%2E. *)
let dots path i j =
  let rec count k n =
    if k = j then Some n
    else if path.[k] = '.' then count (k + 1) (n + 1)
    else if
      k + 2 < j
      && path.[k] = '%'
      && path.[k + 1] = '2'
      && (path.[k + 2] = 'e' || path.[k + 2] = 'E')
    then count (k + 3) (n + 1)
    else None
  in
  if i = j then None
  else match count i 0 with Some n when n <= 2 -> Some n | _ -> None

(* Whether any segment of [path] is a dot-segment: the common path has none
   and is returned as it is. One pass, no allocation: a dot-segment starts
   right after a "/" with "." or "%", so only those segments are looked at. *)
let rec dot_segment_from path n i =
  (* [i] starts a segment. *)
  i < n
  &&
  let j = index_byte path i n '/' in
  match String.unsafe_get path i with
  | '.' | '%' ->
      Option.is_some (dots path i j) || dot_segment_from path n (j + 1)
  | _ -> dot_segment_from path n (j + 1)

let has_dot_segment path =
  let n = String.length path in
  n > 0 && dot_segment_from path n 1

let normalize path =
  let n = String.length path in
  if n = 0 || path.[0] <> '/' then Error Not_absolute
  else if not (has_dot_segment path) then Ok path
  else
    (* Segments kept so far, last first. *)
    let rec go i kept =
      let j =
        match String.index_from_opt path i '/' with Some j -> j | None -> n
      in
      let last = j >= n in
      let kept =
        match dots path i j with
        | Some 1 -> Ok (if last then "" :: kept else kept)
        | Some _ -> (
            match kept with
            | [] -> Error Escapes_root
            | _ :: above -> Ok (if last then "" :: above else above))
        | None -> Ok (String.sub path i (j - i) :: kept)
      in
      match kept with
      | Error _ as e -> e
      | Ok kept -> if last then Ok kept else go (j + 1) kept
    in
    match go 1 [] with
    | Error e -> Error e
    | Ok kept -> Ok ("/" ^ String.concat "/" (List.rev kept))

(* Decoded segments after the leading "/", in order; [escaped]: whether the
   path holds a "%" at all (if not, a segment is a plain substring). *)
let rec decoded_from ~escaped path n start =
  let i = index_byte path start n '/' in
  let seg =
    if escaped then decode_range path start i
    else String.sub path start (i - start)
  in
  if i = n then [ seg ] else seg :: decoded_from ~escaped path n (i + 1)

let split_decoded_with ~escaped path =
  let n = String.length path in
  if n = 0 || path.[0] <> '/' then Error Not_absolute
  else if n = 1 then Ok []
  else
    match decoded_from ~escaped path n 1 with
    | segs -> Ok segs
    | exception Bad -> Error Bad_escape

let split_decoded path =
  split_decoded_with ~escaped:(has_percent path 0 (String.length path)) path

let rec find_bad seg i n =
  if i = n then Ok ()
  else
    match String.unsafe_get seg i with
    | '/' -> Error Encoded_slash
    | '\000' -> Error Nul_byte
    | _ -> find_bad seg (i + 1) n

(* Whether [resolve] may keep [segs] as they are: no empty, "." or ".."
   segment (checked on the decoded segments). *)
let rec all_plain = function
  | [] -> true
  | ("" | "." | "..") :: _ -> false
  | _ :: rest -> all_plain rest

(* The common path (no "%", no empty, "." or ".." segment) split in one pass
   over its bytes: the general path below scans it twice (for "%", then for
   each "/") before checking its segments. *)
exception Not_plain

let plain_segment path start stop =
  match stop - start with
  | 0 -> raise_notrace Not_plain
  | 1 when String.unsafe_get path start = '.' -> raise_notrace Not_plain
  | 2
    when String.unsafe_get path start = '.'
         && String.unsafe_get path (start + 1) = '.' ->
      raise_notrace Not_plain
  | length -> String.sub path start length

(* [start] begins the segment that [i] is in. *)
let rec plain_from path n start i =
  if i = n then [ plain_segment path start n ]
  else
    match String.unsafe_get path i with
    | '%' -> raise_notrace Not_plain
    | '/' ->
        let seg = plain_segment path start i in
        seg :: plain_from path n (i + 1) (i + 1)
    | _ -> plain_from path n start (i + 1)

let plain_segments path =
  let n = String.length path in
  if n < 2 || String.unsafe_get path 0 <> '/' then None
  else
    match plain_from path n 1 1 with
    | segs -> Some segs
    | exception Not_plain -> None

let resolve_general path =
  (* Only a decoded escape can put "/" or NUL in a segment. *)
  let escaped = has_percent path 0 (String.length path) in
  match split_decoded_with ~escaped path with
  | Error _ as e -> e
  | Ok segs when (not escaped) && all_plain segs ->
      (* The common path: nothing to drop, climb or check. *)
      Ok segs
  | Ok segs ->
      let rec go acc = function
        | [] -> Ok (List.rev acc)
        | ("" | ".") :: rest -> go acc rest
        | ".." :: rest -> (
            match acc with [] -> Error Escapes_root | _ :: up -> go up rest)
        | seg :: rest -> (
            match
              if escaped then find_bad seg 0 (String.length seg) else Ok ()
            with
            | Ok () -> go (seg :: acc) rest
            | Error _ as e -> e)
      in
      go [] segs

let resolve path =
  match plain_segments path with
  | Some segs -> Ok segs
  | None -> resolve_general path

(* A plain path's segments are its decoded ones. *)
let segments path =
  match plain_segments path with
  | Some segs -> Ok segs
  | None -> split_decoded path

(* RFC 3986 pchar minus pct-encoded: unreserved, sub-delims, ":" and "@". *)
let is_pchar = function
  | 'A' .. 'Z' | 'a' .. 'z' | '0' .. '9' | '-' | '.' | '_' | '~' -> true
  | '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ',' | ';' | '=' -> true
  | ':' | '@' -> true
  | _ -> false

let encode_segment s =
  if String.for_all is_pchar s then s
  else
    let b = Buffer.create (String.length s + 8) in
    String.iter
      (fun c ->
        if is_pchar c then Buffer.add_char b c
        else Printf.bprintf b "%%%02X" (Char.code c))
      s;
    Buffer.contents b

let of_segments segs = "/" ^ String.concat "/" (List.map encode_segment segs)
