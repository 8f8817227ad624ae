(* The framing fields of a message head (RFC 9112 §6), folded field by field
   into small integer states: shared by the request and the response parsers,
   so that both sides frame bodies by the same rules. *)

open Head_scanner

let is_digit c = c >= '0' && c <= '9'

(* Field values of the framing headers, folded left to right. Each returns
   the new state; no allocation. *)

let cl_none = -1
let cl_invalid = -2
let cl_conflict = -3

(* Content-Length: 1*DIGIT, or a list of one repeated value (RFC 9110 §8.6),
   folded into [current] across fields. Saturates at [max_int], which any
   body limit then refuses. *)
let content_length value current =
  let n = String.length value in
  let is_ows i = i < n && (value.[i] = ' ' || value.[i] = '\t') in
  let rec element i current =
    (* [i] is at the start of an element. *)
    let j = ref i and v = ref 0 in
    while !j < n && is_digit (String.unsafe_get value !j) do
      let d = Char.code (String.unsafe_get value !j) - 48 in
      v := if !v > (max_int - d) / 10 then max_int else (!v * 10) + d;
      incr j
    done;
    if !j = i then cl_invalid
    else if current <> cl_none && current <> !v then cl_conflict
    else (
      while is_ows !j do
        incr j
      done;
      if !j = n then !v
      else if value.[!j] <> ',' then cl_invalid
      else (
        incr j;
        while is_ows !j do
          incr j
        done;
        element !j !v))
  in
  if current < cl_none then current else element 0 current

(* Transfer-Encoding state, as bits. *)
let te_seen = 1
let te_chunked = 2
let te_after_chunked = 4
let te_before_chunked = 8
let te_chunked_twice = 16
let te_invalid = 32
let chunked_token = "chunked"

(* Transfer-Encoding = #transfer-coding (RFC 9112 §6.1), where
   transfer-coding = token *( OWS ";" OWS transfer-parameter ) and
   transfer-parameter = token BWS "=" BWS ( token / quoted-string ) (§7), folded
   into [state] across fields. Parsed whole rather than split on commas, so
   that a comma inside a quoted parameter value does not end an element. *)
let transfer_codings value state =
  let n = String.length value in
  let rec skip_ows i =
    if
      i < n
      && (String.unsafe_get value i = ' ' || String.unsafe_get value i = '\t')
    then skip_ows (i + 1)
    else i
  in
  let rec token_end i =
    if i < n && is_tchar (String.unsafe_get value i) then token_end (i + 1)
    else i
  in
  (* From after the opening quote to after the closing one; -1 if there is
     none or a byte a quoted-string may not hold (RFC 9110 §5.6.4). *)
  let rec quoted_end i =
    if i >= n then -1
    else
      match String.unsafe_get value i with
      | '"' -> i + 1
      | '\\' ->
          if i + 1 < n && is_field_char (String.unsafe_get value (i + 1)) then
            quoted_end (i + 2)
          else -1
      | c -> if is_field_char c then quoted_end (i + 1) else -1
  in
  (* The index after the parameters that start at [i] (at [i] if none), or
     -1 if they are malformed. *)
  let rec parameters i =
    let semicolon = skip_ows i in
    if semicolon < n && String.unsafe_get value semicolon = ';' then
      let name = skip_ows (semicolon + 1) in
      let name_end = token_end name in
      let equals = skip_ows name_end in
      if name_end = name || equals >= n || String.unsafe_get value equals <> '='
      then -1
      else
        let v = skip_ows (equals + 1) in
        let v_end =
          if v < n && String.unsafe_get value v = '"' then quoted_end (v + 1)
          else
            let e = token_end v in
            if e = v then -1 else e
        in
        if v_end < 0 then -1 else parameters v_end
    else i
  in
  let is_chunked start stop =
    stop - start = 7
    &&
    let rec same k =
      k = 7
      || Char.lowercase_ascii (String.unsafe_get value (start + k))
         = String.unsafe_get chunked_token k
         && same (k + 1)
    in
    same 0
  in
  let rec element i state =
    let i = skip_ows i in
    if i = n then state
    else if String.unsafe_get value i = ',' then
      (* An empty list element, which a recipient ignores (RFC 9110
         §5.6.1.2). *)
      element (i + 1) state
    else
      let name_end = token_end i in
      let after = if name_end = i then -1 else parameters name_end in
      let next = if after < 0 then n else skip_ows after in
      if after < 0 || (next < n && String.unsafe_get value next <> ',') then
        state lor te_invalid
      else
        let state =
          if is_chunked i name_end then
            (* chunked defines no parameters (RFC 9112 §7). *)
            if after > name_end then state lor te_invalid
            else if state land te_chunked <> 0 then state lor te_chunked_twice
            else state lor te_chunked
          else if state land te_chunked <> 0 then state lor te_after_chunked
          else state lor te_before_chunked
        in
        if next = n then state else element (next + 1) state
  in
  element 0 state
