exception Rejected of Parse_error.t
exception Truncated

let reject status reason =
  raise_notrace (Rejected { Parse_error.status; reason; close = true })

let reject_char c reason =
  match c with
  | '\r' -> reject 400 "bare CR"
  | '\000' -> reject 400 "NUL character"
  | _ -> reject 400 reason

(* One byte of flags per character. *)
let tchar = 1
let field_char = 2
let target_char = 4

let classes =
  String.init 256 (fun i ->
      let c = Char.chr i in
      let is_tchar = Headers.is_tchar c in
      let is_field_char = Headers.is_field_char c in
      let is_target_char = i >= 0x21 && i <= 0x7e in
      Char.chr
        ((if is_tchar then tchar else 0)
        lor (if is_field_char then field_char else 0)
        lor if is_target_char then target_char else 0))

let[@inline] has cls c =
  Char.code (String.unsafe_get classes (Char.code c)) land cls <> 0

let is_tchar c = has tchar c
let is_field_char c = has field_char c
let is_target_char c = has target_char c

let rec scan_tchars buf i stop =
  if i < stop && has tchar (Bytes.unsafe_get buf i) then
    scan_tchars buf (i + 1) stop
  else i

let rec scan_target_chars_bytes buf i stop =
  if i < stop && has target_char (Bytes.unsafe_get buf i) then
    scan_target_chars_bytes buf (i + 1) stop
  else i

let[@inline] is_ows c = c = ' ' || c = '\t'

let rec skip_ows buf i stop =
  if i < stop && is_ows (Bytes.unsafe_get buf i) then skip_ows buf (i + 1) stop
  else i

let rec trim_ows_end buf start stop =
  if stop > start && is_ows (Bytes.unsafe_get buf (stop - 1)) then
    trim_ows_end buf start (stop - 1)
  else stop

(* Word-at-a-time scanning: eight bytes per step on the long runs (user
   agents, cookies, accept lists), byte by byte only around the byte that
   stops the scan. *)

external get64u : bytes -> int -> int64 = "%caml_bytes_get64u"

let ones = 0x0101010101010101L
let highs = 0x8080808080808080L

(* Some byte of [x] is below [n] (for [n <= 128]); the classic bit trick. *)
let[@inline] has_byte_below x n =
  Int64.logand (Int64.logand (Int64.sub x n) (Int64.lognot x)) highs <> 0L

let[@inline] has_zero_byte x = has_byte_below x ones
let newlines = 0x0a0a0a0a0a0a0a0aL
let spaces = 0x2020202020202020L
let deletes = 0x7f7f7f7f7f7f7f7fL

let rec scan_lf_bytes buf i stop =
  if i >= stop || Bytes.unsafe_get buf i = '\n' then i
  else scan_lf_bytes buf (i + 1) stop

let rec scan_lf buf i stop =
  if i + 8 <= stop then
    if has_zero_byte (Int64.logxor (get64u buf i) newlines) then
      scan_lf_bytes buf i stop
    else scan_lf buf (i + 8) stop
  else scan_lf_bytes buf i stop

let rec scan_field_chars_bytes buf i stop =
  if i < stop && has field_char (Bytes.unsafe_get buf i) then
    scan_field_chars_bytes buf (i + 1) stop
  else i

let rec scan_field_chars buf i stop =
  if i + 8 <= stop then
    let word = get64u buf i in
    (* Visible or obs-text bytes only: no control byte, no DEL. A word with
       a tab, or with the byte that ends the run, goes byte by byte. *)
    if has_byte_below word spaces || has_zero_byte (Int64.logxor word deletes)
    then
      let j = scan_field_chars_bytes buf i (i + 8) in
      if j < i + 8 then j else scan_field_chars buf j stop
    else scan_field_chars buf (i + 8) stop
  else scan_field_chars_bytes buf i stop

(* Target characters are the visible ones, 0x21 to 0x7e: a word with none
   below 0x21 and none from 0x7f up is all target characters. *)
let lows = 0x7f7f7f7f7f7f7f7fL

let[@inline] has_byte_from_7f x =
  Int64.logand (Int64.logor (Int64.add (Int64.logand x lows) ones) x) highs
  <> 0L

let bangs = 0x2121212121212121L

let rec scan_target_chars buf i stop =
  if i + 8 <= stop then
    let word = get64u buf i in
    if has_byte_below word bangs || has_byte_from_7f word then
      let j = scan_target_chars_bytes buf i (i + 8) in
      if j < i + 8 then j else scan_target_chars buf j stop
    else scan_target_chars buf (i + 8) stop
  else scan_target_chars_bytes buf i stop

(* [scanned] bytes after [input.pos] are known not to be LF: a refill may
   move the window, so positions are kept relative to its start. *)
let rec search_lf (input : Input.t) ~budget ~status ~reason scanned =
  let pos = input.pos and lim = input.lim in
  let bound = pos + budget in
  let stop = if lim < bound then lim else bound in
  let i = scan_lf input.buf (pos + scanned) stop in
  if i < stop then i
  else if stop = bound then reject status reason
  else if Input.refill input = 0 then raise_notrace Truncated
  else search_lf input ~budget ~status ~reason (i - pos)

let find_lf (input : Input.t) ~budget ~status ~reason =
  search_lf input ~budget ~status ~reason 0

let content_end buf start lf =
  if lf > start && Bytes.unsafe_get buf (lf - 1) = '\r' then lf - 1 else lf

(* One frame per field: the array is allocated at the empty line, at its
   exact size, and filled as the frames return. *)
let rec fields (input : Input.t) ~max_fields ~count ~budget =
  let lf =
    find_lf input ~budget ~status:431 ~reason:"header section too large"
  in
  let buf = input.buf and start = input.pos in
  let stop = content_end buf start lf in
  let line = lf + 1 - start in
  if stop = start then (
    Input.consume input line;
    Array.make (2 * count) "")
  else (
    if count >= max_fields then reject 431 "too many header fields";
    let first = Bytes.unsafe_get buf start in
    if is_ows first then reject 400 "obs-fold (line folding) is not allowed";
    let colon = scan_tchars buf start stop in
    if colon = stop then reject 400 "header field without a colon";
    let c = Bytes.unsafe_get buf colon in
    if c <> ':' then
      if is_ows c then reject 400 "whitespace before the colon"
      else reject_char c "invalid character in field name";
    if colon = start then reject 400 "empty field name";
    let value_start = skip_ows buf (colon + 1) stop in
    let value_stop = trim_ows_end buf value_start stop in
    let bad = scan_field_chars buf value_start value_stop in
    if bad < value_stop then
      reject_char (Bytes.unsafe_get buf bad) "invalid character in field value";
    let name = Bytes.sub_string buf start (colon - start) in
    let value = Bytes.sub_string buf value_start (value_stop - value_start) in
    Input.consume input line;
    let a =
      fields input ~max_fields ~count:(count + 1) ~budget:(budget - line)
    in
    Array.unsafe_set a (2 * count) name;
    Array.unsafe_set a ((2 * count) + 1) value;
    a)

let field_section input ~max_fields ~max_bytes =
  Headers.of_flat_array (fields input ~max_fields ~count:0 ~budget:max_bytes)
