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

(* Word-at-a-time scanning (the tricks are in [Word]): eight bytes per step,
   byte by byte only at the end of the buffer, and around a tab in a field
   value. *)

let newlines = Word.repeat '\n'
let spaces = Word.repeat ' '
let deletes = Word.repeat '\x7f'

let rec scan_lf_bytes buf i stop =
  if i >= stop || Bytes.unsafe_get buf i = '\n' then i
  else scan_lf_bytes buf (i + 1) stop

(* Reads whole words up to the buffer's end, past [stop] if need be: a byte
   found there counts as none. *)
let rec scan_lf buf i stop =
  if Sys.big_endian then scan_lf_bytes buf i stop
  else if i >= stop then stop
  else if i + 8 <= Bytes.length buf then
    let found = Word.zeros (Int64.logxor (Word.of_bytes buf i) newlines) in
    if found = 0L then scan_lf buf (i + 8) stop
    else
      let j = i + Word.first found in
      if j < stop then j else stop
  else scan_lf_bytes buf i stop

let rec scan_field_chars_bytes buf i stop =
  if i < stop && has field_char (Bytes.unsafe_get buf i) then
    scan_field_chars_bytes buf (i + 1) stop
  else i

let rec scan_field_chars buf i stop =
  if i + 8 <= stop then
    let word = Word.of_bytes buf i in
    (* Visible or obs-text bytes only: no control byte, no DEL. A word with
       a tab, or with the byte that ends the run, goes byte by byte. *)
    if Int64.logor (Word.below word spaces) (Word.equal word deletes) <> 0L then
      let j = scan_field_chars_bytes buf i (i + 8) in
      if j < i + 8 then j else scan_field_chars buf j stop
    else scan_field_chars buf (i + 8) stop
  else scan_field_chars_bytes buf i stop

(* Target characters are the visible ones, 0x21 to 0x7e. *)
let bangs = Word.repeat '!'

let[@inline] not_target_bytes word =
  Int64.logor (Word.below word bangs) (Word.from_7f word)

(* Field names and methods are mostly letters, digits and "-": a word of
   those goes at once. A byte [b < 0x80] is in [lo, hi] when [b + 0x80 - lo]
   has its high bit set and [b + 0x7f - hi] has not (no carry between bytes
   below 0x80; a byte from 0x80 up counts as uncommon, and a carry out of it
   only touches the bytes after it). *)
let dashes = Word.repeat '-'

let[@inline] uncommon_name_bytes word =
  let common =
    Int64.logor
      (Int64.logor (Word.lowercase word) (Word.uppercase word))
      (Int64.logor (Word.digits word) (Word.equal word dashes))
  in
  Int64.logand (Int64.logor (Int64.lognot common) word) Word.highs

(* One word loop for both runs: the kind is a constant at each call, so
   choosing the mask costs a branch per word, not a call. *)
type run = Target | Name

(* Reads whole words up to the buffer's end, past [stop] if need be: a byte
   found there counts as none. *)
let rec scan_run run buf i stop =
  if i >= stop then stop
  else if Sys.big_endian || i + 8 > Bytes.length buf then
    match run with
    | Target -> scan_target_chars_bytes buf i stop
    | Name -> scan_tchars_bytes buf i stop
  else
    let word = Word.of_bytes buf i in
    let flagged =
      match run with
      | Target -> not_target_bytes word
      | Name -> uncommon_name_bytes word
    in
    if flagged = 0L then scan_run run buf (i + 8) stop
    else
      let j = i + Word.first flagged in
      if j >= stop then stop
      else
        match run with
        | Name when has tchar (Bytes.unsafe_get buf j) ->
            (* Another token character ("_", "." ...): go on. *)
            scan_run run buf (j + 1) stop
        | Name | Target -> j

let scan_target_chars buf i stop = scan_run Target buf i stop
let scan_tchars buf i stop = scan_run Name buf i stop

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
