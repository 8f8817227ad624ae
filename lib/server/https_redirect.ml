open Braid_web

(* The host of an authority ([host[:port]]), without its port. *)
let host_of_authority authority =
  if authority <> "" && authority.[0] = '[' then
    match String.index_opt authority ']' with
    | Some i -> String.sub authority 0 (i + 1)
    | None -> authority
  else
    match String.index_opt authority ':' with
    | Some i -> String.sub authority 0 i
    | None -> authority

(* The authority of an absolute-form target ([scheme://authority/...]), if
   it has one. *)
let target_authority target =
  match String.index_opt target ':' with
  | Some i
    when i + 2 < String.length target
         && target.[i + 1] = '/'
         && target.[i + 2] = '/' ->
      let start = i + 3 in
      let rec stop j =
        if j >= String.length target then j
        else match target.[j] with '/' | '?' | '#' -> j | _ -> stop (j + 1)
      in
      Some (String.sub target start (stop start - start))
  | _ -> None

let handler ~port (request : Handler.request) =
  let host =
    match request.head.target_form with
    | Absolute_form -> (
        (* The parser checks only the scheme of such a target; its authority
           gets the Host field's grammar (no userinfo, RFC 9110 §4.2.4). *)
        match target_authority request.head.target with
        | Some a when Braid_http.Uri_host.is_host_field a ->
            Ok (host_of_authority a)
        | Some _ | None -> Error ())
    | Origin_form | Authority_form | Asterisk_form -> (
        (* Checked by the parser. *)
        match Handler.header request "host" with
        | Some h -> Ok (host_of_authority h)
        | None -> Ok "")
  in
  match host with
  | Error () -> Response.error 400 "bad host in the request target"
  | Ok "" -> Response.error 400 "the redirect to HTTPS needs a host name (Host)"
  | Ok host -> (
      let authority =
        if port = 443 then host else Printf.sprintf "%s:%d" host port
      in
      let target =
        match request.query with
        | None -> request.path
        | Some q -> request.path ^ "?" ^ q
      in
      match Response.redirect ~status:308 ("https://" ^ authority ^ target) with
      | response -> response
      | exception Invalid_argument _ -> Response.error 400 "bad Host")

let routes ~port =
  let redirect =
    Router.Found
      {
        handler = handler ~port;
        params = [];
        tail = None;
        (* The configuration's limit: a POST's body is no reason to refuse
           the redirect (308 keeps the method and body). *)
        max_body = None;
      }
  in
  fun _ _ -> redirect
