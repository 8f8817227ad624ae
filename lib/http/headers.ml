(* [| name0; value0; name1; value1; ... |]: one block for the whole set, so a
   parsed request costs one array plus the strings. *)
type t = string array

let empty = [||]
let of_flat_array a = a

let is_tchar c =
  (c >= 'a' && c <= 'z')
  || (c >= 'A' && c <= 'Z')
  || (c >= '0' && c <= '9')
  || String.contains "!#$%&'*+-.^_`|~" c

let is_field_char c = c = ' ' || c = '\t' || (c >= '!' && c <> '\127')

(* Every field of every response a handler or a proxy makes is checked:
   plain loops over a table of the two classes (bit 1: token, bit 2: field
   value), no function called per byte. *)
let classes =
  String.init 256 (fun i ->
      let c = Char.chr i in
      Char.chr
        ((if is_tchar c then 1 else 0) lor if is_field_char c then 2 else 0))

(* The bytes [from, until) of [s] are all of class [cls]. *)
let in_class cls s from until =
  let i = ref from in
  while
    !i < until
    && Char.code
         (String.unsafe_get classes (Char.code (String.unsafe_get s !i)))
       land cls
       <> 0
  do
    incr i
  done;
  !i = until

let is_name s = s <> "" && in_class 1 s 0 (String.length s)
let values_in s from until = in_class 2 s from until

(* Values are most of the bytes checked (a proxy checks every field it
   passes on, twice): eight at a time. A word none of whose bytes is below
   0x20 (the subtraction borrows into the top bit of such a byte only; bytes
   from 0x80 up, obs-text, are allowed) or 0x7f (the same test on the word
   xor 0x7f...) holds only field characters; one that might not (a tab is
   allowed) is looked at byte by byte. *)
let is_value s =
  let n = String.length s in
  let i = ref 0 and ok = ref true in
  while !ok && !i + 8 <= n do
    let w = String.get_int64_le s !i in
    let v = Int64.logxor w 0x7f7f7f7f7f7f7f7fL in
    let control =
      Int64.(
        logand
          (logor
             (logand (sub w 0x2020202020202020L) (lognot w))
             (logand (sub v 0x0101010101010101L) (lognot v)))
          0x8080808080808080L)
    in
    if control <> 0L && not (values_in s !i (!i + 8)) then ok := false;
    i := !i + 8
  done;
  !ok && values_in s !i n

let of_list fields =
  let a = Array.make (2 * List.length fields) "" in
  List.iteri
    (fun i (n, v) ->
      a.(2 * i) <- n;
      a.((2 * i) + 1) <- v)
    fields;
  a

let length t = Array.length t / 2

let name t i =
  if i < 0 || i >= length t then invalid_arg "Headers.name";
  t.(2 * i)

let value t i =
  if i < 0 || i >= length t then invalid_arg "Headers.value";
  t.((2 * i) + 1)

let to_list t = List.init (length t) (fun i -> (t.(2 * i), t.((2 * i) + 1)))

let rec equal_name_from a b n i =
  i = n
  || Char.lowercase_ascii (String.unsafe_get a i)
     = Char.lowercase_ascii (String.unsafe_get b i)
     && equal_name_from a b n (i + 1)

let equal_name a b =
  let n = String.length a in
  n = String.length b && equal_name_from a b n 0

(* By length first, with no lowercased copy: a proxy or client looks at
   every field of every message. *)
let is_hop_by_hop name =
  match String.length name with
  | 2 -> equal_name name "te"
  | 7 -> equal_name name "upgrade"
  | 10 -> equal_name name "connection" || equal_name name "keep-alive"
  | 16 -> equal_name name "proxy-connection"
  | 17 -> equal_name name "transfer-encoding"
  | _ -> false

let rec find_from t name i =
  if i >= Array.length t then None
  else if equal_name t.(i) name then Some t.(i + 1)
  else find_from t name (i + 2)

let find t name = find_from t name 0

let find_all t name =
  let rec from i =
    if i >= Array.length t then []
    else if equal_name t.(i) name then t.(i + 1) :: from (i + 2)
    else from (i + 2)
  in
  from 0

let mem t name = Option.is_some (find_from t name 0)

let count t name =
  let c = ref 0 in
  for i = 0 to length t - 1 do
    if equal_name t.(2 * i) name then incr c
  done;
  !c

let is_ows c = c = ' ' || c = '\t'

(* Does [s.[start .. stop-1]], trimmed of whitespace, equal [token]? *)
let element_is s start stop token =
  let start = ref start and stop = ref stop in
  while !start < !stop && is_ows (String.unsafe_get s !start) do
    incr start
  done;
  while !stop > !start && is_ows (String.unsafe_get s (!stop - 1)) do
    decr stop
  done;
  let n = String.length token in
  !stop - !start = n
  &&
  let rec from i =
    i = n
    || Char.lowercase_ascii (String.unsafe_get s (!start + i))
       = Char.lowercase_ascii (String.unsafe_get token i)
       && from (i + 1)
  in
  from 0

let list_has_token value token =
  let n = String.length value in
  let rec element start =
    start <= n
    &&
    let stop = ref start in
    while !stop < n && String.unsafe_get value !stop <> ',' do
      incr stop
    done;
    let stop = !stop in
    element_is value start stop token || element (stop + 1)
  in
  element 0

let has_token t name token =
  let rec from i =
    i < Array.length t
    && ((equal_name t.(i) name && list_has_token t.(i + 1) token)
       || from (i + 2))
  in
  from 0

let iter f t =
  for i = 0 to length t - 1 do
    f t.(2 * i) t.((2 * i) + 1)
  done

let fold f t acc =
  let acc = ref acc in
  for i = 0 to length t - 1 do
    acc := f t.(2 * i) t.((2 * i) + 1) !acc
  done;
  !acc

let pp ppf t = iter (fun n v -> Format.fprintf ppf "%s: %s@\n" n v) t
