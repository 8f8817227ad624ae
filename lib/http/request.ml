type version = Http_1_0 | Http_1_1 | Http_2

type target_form =
  | Origin_form
  | Absolute_form
  | Authority_form
  | Asterisk_form

type body = No_body | Content_length of int | Chunked

type t = {
  meth : Method.t;
  target : string;
  target_form : target_form;
  version : version;
  headers : Headers.t;
  body : body;
  keep_alive : bool;
  expect_continue : bool;
}

let header t name = Headers.find t.headers name

let keep_alive_of version headers =
  match version with
  | Http_1_1 -> not (Headers.has_token headers "connection" "close")
  | Http_2 -> true
  | Http_1_0 ->
      Headers.has_token headers "connection" "keep-alive"
      && not (Headers.has_token headers "connection" "close")

let expect_continue_of version headers =
  match version with
  | Http_1_0 -> false
  | Http_1_1 | Http_2 -> Headers.has_token headers "expect" "100-continue"

let version_to_string = function
  | Http_1_0 -> "HTTP/1.0"
  | Http_1_1 -> "HTTP/1.1"
  | Http_2 -> "HTTP/2.0"

let pp ppf t =
  Format.fprintf ppf "%a %s %s (%s, %s%s)@\n%a" Method.pp t.meth t.target
    (version_to_string t.version)
    (match t.body with
    | No_body -> "no body"
    | Content_length n -> Printf.sprintf "length %d" n
    | Chunked -> "chunked")
    (if t.keep_alive then "keep-alive" else "close")
    (if t.expect_continue then ", 100-continue" else "")
    Headers.pp t.headers
