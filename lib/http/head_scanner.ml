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

let rec scan_tchars_bytes buf i stop =
  if i < stop && has tchar (Bytes.unsafe_get buf i) then
    scan_tchars_bytes buf (i + 1) stop
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

(* The index in its word of the first byte a mask flags (the tricks above
   set that byte's high bit; bytes after it may be flagged wrongly, bytes
   before it never are): the lowest set bit, 8k + 7, gives k through a
   multiplication. Words are read little-endian on the machines that have
   it; elsewhere the scans go byte by byte. *)
let byte_indices = 0x0001020304050607L

let[@inline] first_flagged mask =
  let lowest = Int64.logand mask (Int64.neg mask) in
  Int64.to_int
    (Int64.shift_right_logical
       (Int64.mul (Int64.shift_right_logical lowest 7) byte_indices)
       56)

let[@inline] zero_bytes x =
  Int64.logand (Int64.logand (Int64.sub x ones) (Int64.lognot x)) highs

let rec scan_lf_bytes buf i stop =
  if i >= stop || Bytes.unsafe_get buf i = '\n' then i
  else scan_lf_bytes buf (i + 1) stop

(* Reads whole words up to the buffer's end, past [stop] if need be: a byte
   found there counts as none. *)
let rec scan_lf buf i stop =
  if Sys.big_endian then scan_lf_bytes buf i stop
  else if i >= stop then stop
  else if i + 8 <= Bytes.length buf then
    let found = zero_bytes (Int64.logxor (get64u buf i) newlines) in
    if found = 0L then scan_lf buf (i + 8) stop
    else
      let j = i + first_flagged found in
      if j < stop then j else stop
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
let bangs = 0x2121212121212121L

(* The bytes of [word] that are not target characters. *)
let[@inline] not_target_bytes word =
  Int64.logor
    (Int64.logand
       (Int64.logand (Int64.sub word bangs) (Int64.lognot word))
       highs)
    (Int64.logand
       (Int64.logor (Int64.add (Int64.logand word lows) ones) word)
       highs)

let rec scan_target_chars buf i stop =
  if Sys.big_endian then scan_target_chars_bytes buf i stop
  else if i >= stop then stop
  else if i + 8 <= Bytes.length buf then
    let bad = not_target_bytes (get64u buf i) in
    if bad = 0L then scan_target_chars buf (i + 8) stop
    else
      let j = i + first_flagged bad in
      if j < stop then j else stop
  else scan_target_chars_bytes buf i stop

(* Field names and methods are mostly letters, digits and "-": a word of
   those goes at once. A byte [b < 0x80] is in [lo, hi] when [b + 0x80 - lo]
   has its high bit set and [b + 0x7f - hi] has not (no carry between bytes
   below 0x80; a byte from 0x80 up counts as uncommon, and a carry out of it
   only touches the bytes after it). *)
let[@inline] times_ones n = Int64.mul ones (Int64.of_int n)
let from_lower = times_ones (0x80 - Char.code 'a')
let past_lower = times_ones (0x7f - Char.code 'z')
let from_upper = times_ones (0x80 - Char.code 'A')
let past_upper = times_ones (0x7f - Char.code 'Z')
let from_digit = times_ones (0x80 - Char.code '0')
let past_digit = times_ones (0x7f - Char.code '9')
let dashes = times_ones (Char.code '-')

let[@inline] within word from past =
  Int64.logand (Int64.add word from) (Int64.lognot (Int64.add word past))

(* The bytes of [word] equal to those of [pattern], exactly (no borrow
   between bytes): [(y land 0x7f) + 0x7f] has its high bit set unless the
   low seven bits are zero. *)
let[@inline] equal_bytes word pattern =
  let y = Int64.logxor word pattern in
  Int64.lognot (Int64.logor (Int64.add (Int64.logand y lows) lows) y)

let[@inline] uncommon_name_bytes word =
  let common =
    Int64.logor
      (Int64.logor
         (within word from_lower past_lower)
         (within word from_upper past_upper))
      (Int64.logor
         (within word from_digit past_digit)
         (equal_bytes word dashes))
  in
  Int64.logand (Int64.logor (Int64.lognot common) word) highs

let rec scan_tchars buf i stop =
  if Sys.big_endian then scan_tchars_bytes buf i stop
  else if i >= stop then stop
  else if i + 8 <= Bytes.length buf then
    let odd = uncommon_name_bytes (get64u buf i) in
    if odd = 0L then scan_tchars buf (i + 8) stop
    else
      let j = i + first_flagged odd in
      if j >= stop then stop
      else if has tchar (Bytes.unsafe_get buf j) then
        (* Another token character ("_", "." ...): go on. *)
        scan_tchars buf (j + 1) stop
      else j
  else scan_tchars_bytes buf i stop

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
