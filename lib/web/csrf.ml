let field_name = "csrf_token"
let header_name = "X-CSRF-Token"
let nonce_bytes = 16
let b64 = Base64.encode_string ~pad:false ~alphabet:Base64.uri_safe_alphabet

let unb64 s =
  match Base64.decode ~pad:false ~alphabet:Base64.uri_safe_alphabet s with
  | Ok d when String.equal (b64 d) s -> Some d
  | _ -> None

let mac ~secret nonce =
  Signed.hmac_sha256 ~key:secret ("braid-csrf-v1\x00" ^ nonce)

(* A fresh nonce per token: every page carries a different text (a page
   compressed with a secret in it leaks less, BREACH), all valid while the
   session's secret lasts. *)
let token (_ : Handler.request) =
  match Session.Private.csrf_secret ~create:true with
  | Some secret ->
      let nonce = Token.random_bytes nonce_bytes in
      b64 (nonce ^ mac ~secret nonce)
  | None -> assert false (* [~create:true] makes one. *)

let tag r =
  Printf.sprintf {|<input type="hidden" name="%s" value="%s">|} field_name
    (Html.escape (token r))

let forbidden why = Error (Response.error 403 why)

let verify (_ : Handler.request) given =
  let valid =
    match (Session.Private.csrf_secret ~create:false, unb64 given) with
    | Some secret, Some raw when String.length raw = nonce_bytes + 32 ->
        let nonce = String.sub raw 0 nonce_bytes in
        Token.equal (mac ~secret nonce) (String.sub raw nonce_bytes 32)
    | _ -> false
  in
  if valid then Ok ()
  else
    forbidden
      "CSRF token invalid: the page is stale (or the form was sent from \
       another site); reload it and try again"

let missing where = forbidden (Printf.sprintf "CSRF token missing: %s" where)

let check_form r pairs =
  match List.filter (fun (n, _) -> String.equal n field_name) pairs with
  | [ (_, given) ] ->
      Result.map
        (fun () ->
          List.filter (fun (n, _) -> not (String.equal n field_name)) pairs)
        (verify r given)
  | [] -> missing "the form has no csrf_token field (Csrf.tag)"
  | _ :: _ :: _ -> forbidden "CSRF token: several csrf_token fields"

let check_header r =
  match Braid_http.Headers.find_all r.Handler.head.headers "x-csrf-token" with
  | [ given ] -> verify r (String.trim given)
  | [] -> missing ("no " ^ header_name ^ " header")
  | _ :: _ :: _ -> forbidden ("CSRF token: several " ^ header_name ^ " headers")

let is_safe (m : Braid_http.Method.t) =
  match m with GET | HEAD | OPTIONS | TRACE -> true | _ -> false

let require_header next r =
  if is_safe r.Handler.head.meth then next r
  else
    match check_header r with Ok () -> next r | Error forbidden -> forbidden

(* The origin of a Referer: its scheme and authority, up to the path. *)
let origin_of_url url =
  match String.index_opt url ':' with
  | Some i
    when i + 2 < String.length url && url.[i + 1] = '/' && url.[i + 2] = '/' ->
      let rest = i + 3 in
      let stop =
        let n = String.length url in
        let rec go j =
          if j >= n then n
          else match url.[j] with '/' | '?' | '#' -> j | _ -> go (j + 1)
        in
        go rest
      in
      Some (String.sub url 0 stop)
  | _ -> None

let check_origin r =
  let cross_site what = forbidden (what ^ " names another site") in
  match Handler.header r "host" with
  | None -> forbidden "no Host to compare the Origin with"
  | Some host -> (
      match Braid_http.Headers.find_all r.Handler.head.headers "origin" with
      | [ origin ] when String.trim origin <> "null" ->
          if Origin.same_origin ~host (String.trim origin) then Ok ()
          else cross_site "Origin"
      | [ _null ] -> cross_site "Origin (null)"
      | _ :: _ :: _ -> forbidden "several Origin fields"
      | [] -> (
          match Handler.header r "referer" with
          | None ->
              forbidden
                "neither Origin nor Referer: cannot tell where the request \
                 comes from"
          | Some referer -> (
              match origin_of_url (String.trim referer) with
              | Some origin when Origin.same_origin ~host origin -> Ok ()
              | Some _ | None -> cross_site "Referer")))
