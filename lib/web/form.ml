let media_type (r : Handler.request) =
  match Handler.header r "content-type" with
  | None -> None
  | Some v ->
      let t =
        match String.index_opt v ';' with
        | Some i -> String.sub v 0 i
        | None -> v
      in
      Some (String.lowercase_ascii (String.trim t))

let urlencoded ?(csrf = true) r =
  match media_type r with
  | Some "application/x-www-form-urlencoded" -> (
      match Handler.body_string r with
      | Error e -> Error (Handler.bad_request e)
      | Ok body -> (
          match Query.decode body with
          | Ok pairs when csrf && Session.Private.in_force () ->
              Csrf.check_form r pairs
          | Ok pairs -> Ok pairs
          | Error why -> Error (Response.error 400 ("form: " ^ why))))
  | Some _ | None ->
      Error
        (Response.error 415
           "expected Content-Type: application/x-www-form-urlencoded")

let field form name =
  match List.assoc_opt name form with
  | Some value when value <> "" -> Ok value
  | Some _ | None ->
      Error (Response.error 400 (Printf.sprintf "form: %s is required" name))
