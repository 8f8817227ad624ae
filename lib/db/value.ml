type t =
  | Null
  | Bool of bool
  | Int of int
  | Float of float
  | Text of string
  | Blob of string

let to_int = function Int i -> Some i | _ -> None

let to_float = function
  | Float f -> Some f
  | Int i -> Some (float_of_int i)
  | _ -> None

let to_bool = function
  | Bool b -> Some b
  | Int 0 -> Some false
  | Int 1 -> Some true
  | _ -> None

let to_text = function Text s | Blob s -> Some s | _ -> None

let equal a b =
  match (a, b) with Float x, Float y -> Float.equal x y | _ -> a = b

let pp ppf = function
  | Null -> Format.pp_print_string ppf "NULL"
  | Bool b -> Format.pp_print_bool ppf b
  | Int i -> Format.pp_print_int ppf i
  | Float f -> Format.fprintf ppf "%g" f
  | Text s -> Format.fprintf ppf "%S" s
  | Blob s -> Format.fprintf ppf "<blob of %d bytes>" (String.length s)
