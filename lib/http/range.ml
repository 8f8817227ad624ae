type t = Whole | Part of { first : int; last : int } | Unsatisfiable

exception Invalid

(* Digits of [s] from [i] to [stop - 1], saturating at [max_int]. *)
let number s i stop =
  if i >= stop then raise Invalid;
  let rec go i n =
    if i = stop then n
    else
      match s.[i] with
      | '0' .. '9' as c ->
          let d = Char.code c - 48 in
          go (i + 1) (if n > (max_int - d) / 10 then max_int else (n * 10) + d)
      | _ -> raise Invalid
  in
  go i 0

let is_ows c = c = ' ' || c = '\t'

let spec s ~size =
  let n = String.length s in
  let dash = try String.index s '-' with Not_found -> raise Invalid in
  if dash = 0 then
    let suffix = number s 1 n in
    if suffix = 0 || size = 0 then Unsatisfiable
    else Part { first = max 0 (size - suffix); last = size - 1 }
  else
    let first = number s 0 dash in
    let last = if dash = n - 1 then max_int else number s (dash + 1) n in
    if last < first then raise Invalid
    else if first >= size then Unsatisfiable
    else Part { first; last = min last (size - 1) }

let resolve field ~size =
  let field = String.trim field in
  let n = String.length field in
  if n < 6 || String.lowercase_ascii (String.sub field 0 6) <> "bytes=" then
    Whole
  else
    let specs =
      String.split_on_char ',' (String.sub field 6 (n - 6))
      |> List.map (fun s ->
             let s = String.trim s in
             if String.exists is_ows s then "!" else s)
      |> List.filter (fun s -> s <> "")
    in
    match specs with
    | [ one ] -> ( try spec one ~size with Invalid -> Whole)
    | _ -> Whole

let content_range ~first ~last ~size =
  Printf.sprintf "bytes %d-%d/%d" first last size

let unsatisfied_range ~size = Printf.sprintf "bytes */%d" size
