open Angstrom
module Limits = Braid_http.Limits

type request = {
  meth : Braid_http.Method.t;
  target : string;
  version : Braid_http.Request.version;
  headers : (string * string) list;
  keep_alive : bool;
  expect_continue : bool;
  body : string;
  trailers : (string * string) list;
}

let is_tchar = function
  | 'a' .. 'z'
  | 'A' .. 'Z'
  | '0' .. '9'
  | '!' | '#' | '$' | '%' | '&' | '\'' | '*' | '+' | '-' | '.' | '^' | '_' | '`'
  | '|' | '~' ->
      true
  | _ -> false

let is_target_char c = c >= '!' && c <= '~'
let is_field_char c = c = ' ' || c = '\t' || (c >= '!' && c <> '\127')
let is_ows c = c = ' ' || c = '\t'
let is_digit c = c >= '0' && c <= '9'

let is_hex = function
  | '0' .. '9' | 'a' .. 'f' | 'A' .. 'F' -> true
  | _ -> false

let hex_value c =
  if c <= '9' then Char.code c - 48 else Char.code (Char.lowercase_ascii c) - 87

(* CRLF, or a lone LF (RFC 9112 §2.2). *)
let eol = char '\r' *> char '\n' <|> char '\n' >>| ignore
let ows = skip_while is_ows
let token = take_while1 is_tchar

let rtrim s =
  let n = ref (String.length s) in
  while !n > 0 && is_ows s.[!n - 1] do
    decr n
  done;
  if !n = String.length s then s else String.sub s 0 !n

let field =
  lift2
    (fun n v -> (n, v))
    (token <* char ':' <* ows)
    (take_while is_field_char >>| rtrim)
  <* eol

let field_section (limits : Limits.t) =
  many field <* eol >>= fun fields ->
  if List.length fields > limits.max_header_fields then
    fail "431 too many fields"
  else if
    List.fold_left
      (fun n (k, v) -> n + String.length k + String.length v + 4)
      2 fields
    > limits.max_header_bytes
  then fail "431 header section too large"
  else return fields

let version =
  string "HTTP/" *> satisfy is_digit >>= fun major ->
  char '.' *> satisfy is_digit >>= fun minor ->
  if major <> '1' then fail "505"
  else return (if minor = '0' then Braid_http.Request.Http_1_0 else Http_1_1)

let request_line (limits : Limits.t) =
  skip_many eol
  *> lift3
       (fun m t v -> (m, t, v))
       (token <* char ' ')
       (take_while1 is_target_char <* char ' ')
       version
  <* eol
  >>= fun ((m, t, _) as line) ->
  if String.length m + String.length t + 10 > limits.max_request_line then
    fail "414"
  else return line

(* Framing checks over the field list, as RFC 9112 §6 asks. *)

let equal_ci a b =
  String.length a = String.length b
  &&
  let rec from i =
    i = String.length a
    || (Char.lowercase_ascii a.[i] = Char.lowercase_ascii b.[i] && from (i + 1))
  in
  from 0

let elements value =
  List.filter_map
    (fun e -> match String.trim e with "" -> None | e -> Some e)
    (String.split_on_char ',' value)

let content_length values =
  let numbers =
    List.concat_map
      (fun v ->
        match elements v with
        | [] -> [ None ]
        | es ->
            List.map
              (fun e ->
                if String.for_all is_digit e && String.length e < 19 then
                  Some (int_of_string e)
                else None)
              es)
      values
  in
  match numbers with
  | [] -> Ok None
  | Some n :: rest ->
      if List.for_all (( = ) (Some n)) rest then Ok (Some n)
      else Error "400 Content-Length"
  | None :: _ -> Error "400 Content-Length"

type framing = No_body | Length of int | Chunked

let framing (limits : Limits.t) version headers =
  let values name =
    List.filter_map
      (fun (k, v) -> if equal_ci k name then Some v else None)
      headers
  in
  let codings = List.concat_map elements (values "transfer-encoding") in
  let lengths = values "content-length" in
  if values "transfer-encoding" <> [] then
    if version = Braid_http.Request.Http_1_0 then Error "400 TE in HTTP/1.0"
    else if lengths <> [] then Error "400 CL and TE"
    else
      match List.rev codings with
      | [ c ] when equal_ci c "chunked" -> Ok Chunked
      | _ -> Error "501 transfer coding"
  else
    match content_length lengths with
    | Error e -> Error e
    | Ok None | Ok (Some 0) -> Ok No_body
    | Ok (Some n) when n > limits.max_body -> Error "413"
    | Ok (Some n) -> Ok (Length n)

let connection_has token headers =
  List.exists
    (fun (k, v) ->
      equal_ci k "connection" && List.exists (equal_ci token) (elements v))
    headers

let skip_quoted =
  char '"'
  *> skip_many
       (char '\\' *> satisfy is_field_char
       <|> satisfy (fun c -> is_field_char c && c <> '"' && c <> '\\'))
  <* char '"'

let chunk_extensions =
  skip_many
    (ows *> char ';' *> ows *> token
    *> option () (ows *> char '=' *> ows *> (skip_quoted <|> (token >>| ignore)))
    )
  <* ows

let chunk_size (limits : Limits.t) =
  take_while1 is_hex >>= fun hex ->
  if String.length hex > 15 then fail "413 chunk too large"
  else
    let n = String.fold_left (fun n c -> (n lsl 4) lor hex_value c) 0 hex in
    if n > limits.max_body then fail "413" else return n

let chunked_body (limits : Limits.t) =
  let rec chunks total =
    chunk_size limits <* chunk_extensions <* eol >>= fun n ->
    if n = 0 then return []
    else if total + n > limits.max_body then fail "413"
    else
      take n <* eol >>= fun data ->
      chunks (total + n) >>| fun rest -> data :: rest
  in
  lift2
    (fun data trailers -> (String.concat "" data, trailers))
    (chunks 0) (field_section limits)

let request limits =
  request_line limits >>= fun (m, target, version) ->
  field_section limits >>= fun headers ->
  match framing limits version headers with
  | Error e -> fail e
  | Ok framing -> (
      let hosts =
        List.length (List.filter (fun (k, _) -> equal_ci k "host") headers)
      in
      if hosts > 1 || (hosts = 0 && version = Http_1_1) then fail "400 Host"
      else
        match Braid_http.Method.of_string m with
        | None -> fail "501"
        | Some meth ->
            let keep_alive =
              match version with
              | Http_1_1 | Http_2 -> not (connection_has "close" headers)
              | Http_1_0 ->
                  connection_has "keep-alive" headers
                  && not (connection_has "close" headers)
            in
            let expect_continue =
              version = Http_1_1
              && List.exists
                   (fun (k, v) ->
                     equal_ci k "expect" && equal_ci v "100-continue")
                   headers
            in
            let make (body, trailers) =
              {
                meth;
                target;
                version;
                headers;
                keep_alive;
                expect_continue;
                body;
                trailers;
              }
            in
            (match framing with
            | No_body -> return ("", [])
            | Length n -> take n >>| fun body -> (body, [])
            | Chunked -> chunked_body limits)
            >>| make)

let stream limits f = skip_many (request limits <* commit >>| f)
