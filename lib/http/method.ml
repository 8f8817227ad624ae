type t = GET | HEAD | POST | PUT | DELETE | CONNECT | OPTIONS | TRACE | PATCH

let to_string = function
  | GET -> "GET"
  | HEAD -> "HEAD"
  | POST -> "POST"
  | PUT -> "PUT"
  | DELETE -> "DELETE"
  | CONNECT -> "CONNECT"
  | OPTIONS -> "OPTIONS"
  | TRACE -> "TRACE"
  | PATCH -> "PATCH"

let rec spelt_from buf off s i =
  i = String.length s
  || Bytes.unsafe_get buf (off + i) = String.unsafe_get s i
     && spelt_from buf off s (i + 1)

let spelt buf off s = spelt_from buf off s 0

(* Dispatch on length and first byte: at most one comparison per call, and
   [Some GET] etc. are static constants, so no allocation. *)
let of_bytes buf off len =
  if off < 0 || len < 0 || off > Bytes.length buf - len then
    invalid_arg "Method.of_bytes";
  if len < 3 || len > 7 then None
  else
    match (len, Bytes.unsafe_get buf off) with
    | 3, 'G' -> if spelt buf off "GET" then Some GET else None
    | 3, 'P' -> if spelt buf off "PUT" then Some PUT else None
    | 4, 'H' -> if spelt buf off "HEAD" then Some HEAD else None
    | 4, 'P' -> if spelt buf off "POST" then Some POST else None
    | 5, 'P' -> if spelt buf off "PATCH" then Some PATCH else None
    | 5, 'T' -> if spelt buf off "TRACE" then Some TRACE else None
    | 6, 'D' -> if spelt buf off "DELETE" then Some DELETE else None
    | 7, 'C' -> if spelt buf off "CONNECT" then Some CONNECT else None
    | 7, 'O' -> if spelt buf off "OPTIONS" then Some OPTIONS else None
    | _ -> None

let of_string s = of_bytes (Bytes.unsafe_of_string s) 0 (String.length s)
let pp ppf m = Format.pp_print_string ppf (to_string m)
