type body = No_body | Content_length of int | Chunked | Until_close

type t = {
  version : Request.version;
  status : int;
  reason : string;
  headers : Headers.t;
  body : body;
  keep_alive : bool;
}

let header t name = Headers.find t.headers name
let is_interim t = t.status >= 100 && t.status < 200 && t.status <> 101

let pp_body ppf = function
  | No_body -> Format.pp_print_string ppf "No_body"
  | Content_length n -> Format.fprintf ppf "Content_length %d" n
  | Chunked -> Format.pp_print_string ppf "Chunked"
  | Until_close -> Format.pp_print_string ppf "Until_close"

let pp ppf t =
  Format.fprintf ppf "%s %d %s (%a, %s)"
    (Request.version_to_string t.version)
    t.status t.reason pp_body t.body
    (if t.keep_alive then "keep-alive" else "close")
