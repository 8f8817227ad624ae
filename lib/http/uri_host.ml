let is_digit c = c >= '0' && c <= '9'
let is_hex c = is_digit c || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
let is_alpha c = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')

(* unreserved / sub-delims (RFC 3986 §2.3, §2.2) *)
let is_unreserved_or_sub_delim c =
  is_alpha c || is_digit c
  ||
  match c with
  | '-' | '.' | '_' | '~' | '!' | '$' | '&' | '\'' | '(' | ')' | '*' | '+' | ','
  | ';' | '=' ->
      true
  | _ -> false

(* One load per byte rather than a dozen comparisons. *)
let unreserved_or_sub_delims =
  String.init 256 (fun i ->
      if is_unreserved_or_sub_delim (Char.chr i) then '\001' else '\000')

(* Eight bytes at a time over the usual host names, [a-z0-9.-]: a byte
   [b < 0x80] is in [[lo, hi]] when [b + 0x80 - lo] has its high bit set and
   [b + 0x7f - hi] has not; these sums never carry into the next byte. *)

let from_dash = Word.from '-'
let past_dot = Word.past '.'

let[@inline] is_common_host_word word =
  Int64.logand word Word.highs = 0L
  && Int64.logand
       (Int64.logor
          (Int64.logor (Word.lowercase word) (Word.digits word))
          (Word.within word from_dash past_dot))
       Word.highs
     = Word.highs

(* reg-name = *( unreserved / pct-encoded / sub-delims ): the index of the
   first byte from [i] that does not continue it, or -1 for a "%" not
   followed by two hexadecimal digits. Every request has a Host: the common
   bytes go by words, the others through the table. *)
let rec reg_name_end s i n =
  let i = ref i in
  while !i + 8 <= n && is_common_host_word (Word.of_string s !i) do
    i := !i + 8
  done;
  (* Fewer than eight bytes left: the last eight, overlapping the ones
     already seen, check them at once. *)
  if
    !i < n
    && !i + 8 > n
    && n >= 8
    && is_common_host_word (Word.of_string s (n - 8))
  then i := n;
  let table = unreserved_or_sub_delims in
  while
    !i < n
    && String.unsafe_get table (Char.code (String.unsafe_get s !i)) <> '\000'
  do
    incr i
  done;
  let i = !i in
  if i < n && String.unsafe_get s i = '%' then
    if i + 2 < n && is_hex s.[i + 1] && is_hex s.[i + 2] then
      reg_name_end s (i + 3) n
    else -1
  else i

let rec all_digits s i n = i >= n || (is_digit s.[i] && all_digits s (i + 1) n)

(* The end of a run of at most [max] bytes satisfying [p] from [i]. *)
let run p s i n ~max =
  let rec go j = if j < n && j - i < max && p s.[j] then go (j + 1) else j in
  go i

(* IPv4address = dec-octet 3( "." dec-octet ), exactly [s.[i .. n-1]];
   dec-octet is 0 to 255 without leading zeros. *)
let is_ipv4 s i n =
  let rec octets i count =
    let j = run is_digit s i n ~max:3 in
    let len = j - i in
    len > 0
    && (len = 1 || s.[i] <> '0')
    && (let value = ref 0 in
        for k = i to j - 1 do
          value := (!value * 10) + Char.code s.[k] - Char.code '0'
        done;
        !value <= 255)
    &&
    if count = 4 then j = n
    else j < n && s.[j] = '.' && octets (j + 1) (count + 1)
  in
  octets i 1

(* IPv6address (RFC 3986 §3.2.2), exactly [s.[i .. n-1]]: eight groups of
   one to four hexadecimal digits separated by ":", the last two possibly an
   IPv4 address, and at most one "::" standing for one or more groups of
   zeros. *)
let is_ipv6 s i n =
  (* [groups] seen so far; [at] is the start of a group. *)
  let rec group at groups ~elided =
    let j = run is_hex s at n ~max:5 in
    if j < n && s.[j] = '.' then is_ipv4 s at n && finish (groups + 2) ~elided
    else if j = at || j - at > 4 then false
    else
      let groups = groups + 1 in
      if j = n then finish groups ~elided
      else if s.[j] <> ':' then false
      else if j + 1 < n && s.[j + 1] = ':' then
        (not elided) && after_elision (j + 2) groups
      else j + 1 < n && group (j + 1) groups ~elided
  and after_elision at groups =
    if at = n then finish groups ~elided:true else group at groups ~elided:true
  and finish groups ~elided = if elided then groups <= 7 else groups = 8 in
  if n - i >= 2 && s.[i] = ':' && s.[i + 1] = ':' then after_elision (i + 2) 0
  else group i 0 ~elided:false

(* IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ) *)
let is_ipv_future s i n =
  i < n
  && (s.[i] = 'v' || s.[i] = 'V')
  &&
  let dot = run is_hex s (i + 1) n ~max:max_int in
  dot > i + 1
  && dot < n - 1
  && s.[dot] = '.'
  &&
  let rec rest j =
    j = n || ((is_unreserved_or_sub_delim s.[j] || s.[j] = ':') && rest (j + 1))
  in
  rest (dot + 1)

(* The index after the uri-host at the start of [s], or -1 if it is not
   one. *)
let host_end s =
  let n = String.length s in
  if n > 0 && s.[0] = '[' then
    match String.index_opt s ']' with
    | None -> -1
    | Some close ->
        if is_ipv6 s 1 close || is_ipv_future s 1 close then close + 1 else -1
  else reg_name_end s 0 n

let is_host_field s =
  let n = String.length s and stop = host_end s in
  stop = n || (stop >= 0 && s.[stop] = ':' && all_digits s (stop + 1) n)

let is_authority_form s =
  let n = String.length s and stop = host_end s in
  stop > 0 && stop < n - 1 && s.[stop] = ':' && all_digits s (stop + 1) n
