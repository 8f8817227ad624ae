type cookie = {
  name : string;
  value : string;
  path : string;
  expires : float option;
  secure : bool;
  http_only : bool;
}

(* Newest last: the order of creation decides ties in [header]. *)
type t = cookie list

let empty = []
let lowercase = String.lowercase_ascii

(* RFC 6265 §5.1.4: the directory of the request path. *)
let default_path path =
  let path =
    match String.index_opt path '?' with
    | Some i -> String.sub path 0 i
    | None -> path
  in
  if path = "" || path.[0] <> '/' then "/"
  else
    match String.rindex_opt path '/' with
    | Some 0 | None -> "/"
    | Some i -> String.sub path 0 i

(* §5.1.4: [cookie_path] is a prefix of [path] ending at a '/' of either. *)
let path_matches ~cookie_path path =
  let n = String.length cookie_path in
  path = cookie_path
  || String.length path > n
     && String.sub path 0 n = cookie_path
     && (cookie_path.[n - 1] = '/' || path.[n] = '/')

(* §5.1.3, without IP addresses' special case: a host is its own domain and
   any name below it. *)
let domain_matches ~host domain =
  let host = lowercase host and domain = lowercase domain in
  let domain =
    if String.length domain > 0 && domain.[0] = '.' then
      String.sub domain 1 (String.length domain - 1)
    else domain
  in
  let h = String.length host and d = String.length domain in
  host = domain
  || (h > d && String.sub host (h - d) d = domain && host.[h - d - 1] = '.')

let replace jar c =
  List.filter (fun o -> not (o.name = c.name && o.path = c.path)) jar @ [ c ]

let set = replace
let remove jar ~name = List.filter (fun c -> c.name <> name) jar
let live ~now c = match c.expires with Some e -> e > now | None -> true

let split_pair s =
  match String.index_opt s '=' with
  | Some i ->
      Some
        ( String.trim (String.sub s 0 i),
          String.trim (String.sub s (i + 1) (String.length s - i - 1)) )
  | None -> None

(* §5.2.2: digits, or '-' and digits; int_of_string would also take "0x10",
   "+5" and "1_0". A negative age deletes, as zero does. *)
let max_age_of v =
  let digits s = s <> "" && String.for_all (fun c -> c >= '0' && c <= '9') s in
  if digits v then Some (Option.value (int_of_string_opt v) ~default:max_int)
  else if
    String.length v > 1
    && v.[0] = '-'
    && digits (String.sub v 1 (String.length v - 1))
  then Some 0
  else None

let receive jar ~now ~https ~host ~path field =
  match String.split_on_char ';' field with
  | [] -> jar
  | first :: attributes -> (
      match split_pair first with
      | None | Some ("", _) -> jar
      | Some (name, value) -> (
          let max_age = ref None
          and expires = ref None
          and cookie_path = ref None
          and domain_ok = ref true
          and secure = ref false
          and http_only = ref false in
          List.iter
            (fun attribute ->
              let key, v =
                match split_pair attribute with
                | Some (k, v) -> (lowercase k, v)
                | None -> (lowercase (String.trim attribute), "")
              in
              match key with
              | "max-age" -> (
                  match max_age_of v with
                  | Some s -> max_age := Some s
                  | None -> ())
              | "expires" -> (
                  match Braid_http.Http_date.parse ~now v with
                  | Some t -> expires := Some t
                  | None -> ())
              | "path" ->
                  (* §5.2.4: a path not starting with '/' is the default. *)
                  if v <> "" && v.[0] = '/' then cookie_path := Some v
              | "domain" -> if v <> "" then domain_ok := domain_matches ~host v
              | "secure" -> secure := true
              | "httponly" -> http_only := true
              | _ -> ())
            attributes;
          let expires =
            match !max_age with
            | Some s -> Some (now +. float_of_int s)
            | None -> !expires
          in
          let c =
            {
              name;
              value;
              path = Option.value !cookie_path ~default:(default_path path);
              expires;
              secure = !secure;
              http_only = !http_only;
            }
          in
          if (not !domain_ok) || (c.secure && not https) then jar
          else
            match expires with
            | Some e when e <= now ->
                List.filter
                  (fun o -> not (o.name = c.name && o.path = c.path))
                  jar
            | _ -> replace jar c))

let header jar ~now ~https ~path =
  let path =
    match String.index_opt path '?' with
    | Some i -> String.sub path 0 i
    | None -> path
  in
  let sent =
    List.filter
      (fun c ->
        live ~now c && ((not c.secure) || https)
        && path_matches ~cookie_path:c.path path)
      jar
  in
  (* Stable: among equal path lengths, the oldest stays first. *)
  let sent =
    List.stable_sort
      (fun a b -> compare (String.length b.path) (String.length a.path))
      sent
  in
  match sent with
  | [] -> None
  | _ ->
      Some
        (String.concat "; " (List.map (fun c -> c.name ^ "=" ^ c.value) sent))

let cookies jar ~now = List.filter (live ~now) jar
