type t = { mutable second : int; mutable line : string }

let create () = { second = min_int; line = "" }

let header_line t now =
  let second = if Float.is_nan now then 0 else int_of_float (Float.floor now) in
  if second <> t.second then (
    t.line <- "Date: " ^ Http_date.format now ^ "\r\n";
    t.second <- second);
  t.line
