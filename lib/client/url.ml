type scheme = Http | Https

type t = {
  scheme : scheme;
  host : string;
  port : int;
  path : string;
  query : string option;
}

let ( let* ) = Result.bind
let default_port = function Http -> 80 | Https -> 443

(* Visible ASCII: what a request-target may hold (RFC 9112 §3.2). *)
let is_target_char c = c > ' ' && c < '\127'

let split_at s i =
  (String.sub s 0 i, String.sub s (i + 1) (String.length s - i - 1))

let without_fragment s =
  match String.index_opt s '#' with Some i -> String.sub s 0 i | None -> s

let split_query s =
  match String.index_opt s '?' with
  | Some i ->
      let p, q = split_at s i in
      (p, Some q)
  | None -> (s, None)

let host_and_port scheme authority =
  if String.contains authority '@' then
    Error "userinfo (user@) in a URL is refused: send credentials in a header"
  else
    let n = String.length authority in
    let* host, port_text =
      if n > 0 && authority.[0] = '[' then
        match String.index_opt authority ']' with
        | None -> Error "unterminated IPv6 literal"
        | Some close ->
            let host = String.sub authority 1 (close - 1) in
            let rest = String.sub authority (close + 1) (n - close - 1) in
            if rest = "" then Ok (host, None)
            else if rest.[0] = ':' then
              Ok (host, Some (String.sub rest 1 (String.length rest - 1)))
            else Error "junk after an IPv6 literal"
      else
        match String.rindex_opt authority ':' with
        | Some i ->
            let h, p = split_at authority i in
            Ok (h, Some p)
        | None -> Ok (authority, None)
    in
    let* port =
      match port_text with
      | None | Some "" -> Ok (default_port scheme)
      | Some p -> (
          match int_of_string_opt p with
          | Some p'
            when String.for_all (fun c -> c >= '0' && c <= '9') p
                 && p' >= 1 && p' <= 65535 ->
              Ok p'
          | _ -> Error (Printf.sprintf "bad port %S" p))
    in
    if host = "" then Error "empty host"
    else if
      not
        (String.for_all
           (fun c ->
             (c >= 'a' && c <= 'z')
             || (c >= 'A' && c <= 'Z')
             || (c >= '0' && c <= '9')
             || c = '-' || c = '.' || c = ':' || c = '_')
           host)
    then Error (Printf.sprintf "bad host %S" host)
    else Ok (String.lowercase_ascii host, port)

let of_string s =
  let s = without_fragment s in
  let* scheme, rest =
    match String.index_opt s ':' with
    | Some i when i + 2 < String.length s && s.[i + 1] = '/' && s.[i + 2] = '/'
      -> (
        let rest = String.sub s (i + 3) (String.length s - i - 3) in
        match String.lowercase_ascii (String.sub s 0 i) with
        | "http" -> Ok (Http, rest)
        | "https" -> Ok (Https, rest)
        | other -> Error (Printf.sprintf "unsupported scheme %S" other))
    | _ -> Error (Printf.sprintf "%S is not an absolute http(s) URL" s)
  in
  if not (String.for_all is_target_char rest) then
    Error "a URL may not hold spaces or control characters"
  else
    let authority_end =
      let n = String.length rest in
      let rec go i =
        if i < n && rest.[i] <> '/' && rest.[i] <> '?' then go (i + 1) else i
      in
      go 0
    in
    let authority = String.sub rest 0 authority_end in
    let path_query =
      String.sub rest authority_end (String.length rest - authority_end)
    in
    let* host, port = host_and_port scheme authority in
    let path, query = split_query path_query in
    let path = if path = "" then "/" else path in
    Ok { scheme; host; port; path; query }

let target t = match t.query with None -> t.path | Some q -> t.path ^ "?" ^ q
let bracketed host = if String.contains host ':' then "[" ^ host ^ "]" else host

let authority t =
  if t.port = default_port t.scheme then bracketed t.host
  else Printf.sprintf "%s:%d" (bracketed t.host) t.port

let scheme_name = function Http -> "http" | Https -> "https"

(* Once per request (a pool's key): no Printf, whose interpretation of the
   format costs more than the rest of the lookup. *)
let origin t =
  String.concat ""
    [ scheme_name t.scheme; "://"; bracketed t.host; ":"; string_of_int t.port ]

let with_target t target =
  if target = "" || target.[0] <> '/' then
    Error "a request-target must start with /"
  else if not (String.for_all is_target_char target) then
    Error "a request-target may not hold spaces or control characters"
  else
    let path, query = split_query (without_fragment target) in
    Ok { t with path; query }

let to_string t = scheme_name t.scheme ^ "://" ^ authority t ^ target t
let pp ppf t = Format.pp_print_string ppf (to_string t)

(* RFC 3986 §5.2.4. *)
let remove_dot_segments path =
  let segments = String.split_on_char '/' path in
  let rec go out = function
    | [] -> List.rev out
    | [ (("." | "..") as s) ] ->
        let out =
          if s = ".." then match out with _ :: r -> r | [] -> [] else out
        in
        List.rev ("" :: out)
    | "." :: rest -> go out rest
    | ".." :: rest ->
        go (match out with [ "" ] -> out | _ :: r -> r | [] -> []) rest
    | s :: rest -> go (s :: out) rest
  in
  let joined = String.concat "/" (go [] segments) in
  if joined = "" || joined.[0] <> '/' then "/" ^ joined else joined

let resolve base reference =
  let reference = without_fragment reference in
  if not (String.for_all is_target_char reference) then
    Error "a Location may not hold spaces or control characters"
  else if
    String.contains reference ':'
    &&
    match (String.index_opt reference ':', String.index_opt reference '/') with
    | Some c, Some s -> c < s
    | Some _, None -> true
    | None, _ -> false
  then of_string reference
  else if String.starts_with ~prefix:"//" reference then
    of_string (scheme_name base.scheme ^ ":" ^ reference)
  else
    let path, query = split_query reference in
    if path = "" then
      Ok { base with query = (match query with None -> base.query | q -> q) }
    else
      let merged =
        if path.[0] = '/' then path
        else
          match String.rindex_opt base.path '/' with
          | Some i -> String.sub base.path 0 (i + 1) ^ path
          | None -> "/" ^ path
      in
      Ok { base with path = remove_dot_segments merged; query }
