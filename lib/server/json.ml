let is_json = function
  | None -> true
  | Some "application/json" -> true
  | Some t -> String.ends_with ~suffix:"+json" t

let body (r : Handler.request) =
  if not (is_json (Form.media_type r)) then
    Error (Response.error 415 "expected Content-Type: application/json")
  else
    match Handler.body_string r with
    | Error e -> Error (Handler.bad_request e)
    | Ok s -> (
        match Yojson.Safe.from_string s with
        | json -> Ok json
        | exception Yojson.Json_error why ->
            Error (Response.error 400 ("invalid JSON: " ^ why)))

let response ?status ?headers json =
  Response.string ?status ?headers ~content_type:"application/json"
    (Yojson.Safe.to_string json)
