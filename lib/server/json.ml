let is_json = function
  | None -> true
  | Some "application/json" -> true
  | Some t -> String.ends_with ~suffix:"+json" t

(* The deepest nesting of arrays and objects, strings skipped: yojson's
   parser recurses once per level, so a body of a million "[" would take
   that much stack. *)
let max_depth = 512

let too_deep s =
  let n = String.length s in
  let rec go i depth in_string =
    if i >= n then false
    else
      let c = String.unsafe_get s i in
      if in_string then
        if c = '\\' then go (i + 2) depth true else go (i + 1) depth (c <> '"')
      else
        match c with
        | '"' -> go (i + 1) depth true
        | '[' | '{' -> depth >= max_depth || go (i + 1) (depth + 1) false
        | ']' | '}' -> go (i + 1) (depth - 1) false
        | _ -> go (i + 1) depth false
  in
  go 0 0 false

let body (r : Handler.request) =
  if not (is_json (Form.media_type r)) then
    Error (Response.error 415 "expected Content-Type: application/json")
  else
    match Handler.body_string r with
    | Error e -> Error (Handler.bad_request e)
    | Ok s when too_deep s ->
        Error
          (Response.error 400
             (Printf.sprintf "invalid JSON: nested more than %d deep" max_depth))
    | Ok s -> (
        match Yojson.Safe.from_string s with
        | json -> Ok json
        | exception Yojson.Json_error why ->
            Error (Response.error 400 ("invalid JSON: " ^ why)))

let response ?status ?headers json =
  Response.string ?status ?headers ~content_type:"application/json"
    (Yojson.Safe.to_string json)
