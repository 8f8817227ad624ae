let needs_escape = function '&' | '<' | '>' | '"' | '\'' -> true | _ -> false

(* The common case (nothing to escape) allocates nothing. *)
let escape s =
  if not (String.exists needs_escape s) then s
  else
    let b = Buffer.create (String.length s + 16) in
    String.iter
      (function
        | '&' -> Buffer.add_string b "&amp;"
        | '<' -> Buffer.add_string b "&lt;"
        | '>' -> Buffer.add_string b "&gt;"
        | '"' -> Buffer.add_string b "&quot;"
        | '\'' -> Buffer.add_string b "&#x27;"
        | c -> Buffer.add_char b c)
      s;
    Buffer.contents b

let plain = function
  | 'a' .. 'z' | 'A' .. 'Z' | '0' .. '9' -> true
  | c -> Char.code c >= 0x80

let attribute s =
  if String.for_all plain s then s
  else
    let b = Buffer.create (String.length s * 2) in
    String.iter
      (fun c ->
        if plain c then Buffer.add_char b c
        else Printf.bprintf b "&#x%02X;" (Char.code c))
      s;
    Buffer.contents b
