open Braid_http

let content_type name =
  Magic_mime.lookup ~default:"application/octet-stream" name

(* [dir ^ "/" ^ name] in one allocation. *)
let join dir name =
  if dir = "/" then "/" ^ name
  else
    let d = String.length dir and n = String.length name in
    let b = Bytes.create (d + 1 + n) in
    Bytes.unsafe_blit_string dir 0 b 0 d;
    Bytes.unsafe_set b d '/';
    Bytes.unsafe_blit_string name 0 b (d + 1) n;
    Bytes.unsafe_to_string b

(* RFC 9110 §13.2.2, steps 1 and 2: If-Match, else If-Unmodified-Since.
   No entity tag is generated, so If-Match holds only as "*" (the file
   exists, §13.1.1); If-Unmodified-Since is ignored unless it is one valid
   date (§13.1.4). *)
let precondition_failed ~now (req : Request.t) ~mtime =
  match Headers.find_all req.headers "if-match" with
  | _ :: _ as fields -> not (List.exists (fun v -> String.trim v = "*") fields)
  | [] -> (
      match Headers.find_all req.headers "if-unmodified-since" with
      | [ v ] -> (
          match Http_date.parse ~now v with
          | Some date -> Float.floor mtime > date
          | None -> false)
      | _ -> false)

let not_modified ?now (req : Request.t) ~mtime =
  match Request.header req "if-none-match" with
  | Some v -> String.trim v = "*"
  | None -> (
      (* RFC 9110 §13.1.3: ignored unless it is one valid date; two field
         lines are a list of two members. *)
      match Headers.find_all req.headers "if-modified-since" with
      | [ v ] -> (
          match Http_date.parse ?now v with
          | Some since -> Float.floor mtime <= since
          | None -> false)
      | _ -> false)

(* If-Range holding the exact Last-Modified date lets the range apply;
   an entity tag never matches (none are generated). *)
let range_applies (req : Request.t) ~mtime ~now =
  match Headers.find_all req.headers "if-range" with
  | [] -> true
  | [ v ] -> (
      match Http_date.parse ~now v with
      | Some date -> Float.equal date (Float.floor mtime)
      | None -> false)
  | _ :: _ :: _ ->
      (* Two validators: not one that matches (RFC 9110 §13.1.5). *)
      false

let within ~root path =
  root = "/" || path = root
  || String.length path > String.length root
     && String.starts_with ~prefix:root path
     && path.[String.length root] = '/'

(* Not [rest = []]: polymorphic comparison, on every request. *)
let is_last = function [] -> true | _ :: _ -> false

let file_error (e : File.error) =
  match e with
  | Not_found -> Response.error 404 ""
  | Forbidden -> Response.error 403 ""
  | Failed _ -> Response.error 500 ""

(* The metadata of [path] (following links) if every link on the way
   stays under [root]. *)
let checked services ~root path ~linked =
  if not linked then services.Services.stat ~follow:true path
  else
    match services.Services.realpath path with
    | Error _ as e -> e
    | Ok real when within ~root real -> services.Services.stat ~follow:true real
    | Ok _ -> Error File.Forbidden

(* Looks [segs] up under [root] one [lstat] at a time: a link anywhere
   triggers the [realpath] check. The path and its metadata (links
   followed). *)
let locate services ~root segs =
  let with_path path = function
    | Ok info -> Ok (path, info)
    | Error _ as e -> e
  in
  let rec walk dir ~linked = function
    | [] -> with_path dir (checked services ~root dir ~linked)
    | seg :: rest -> (
        let path = join dir seg in
        match services.Services.stat ~follow:false path with
        | Error _ as e -> e
        | Ok { kind = Symlink; _ } -> walk path ~linked:true rest
        | Ok ({ kind = Directory; _ } as info) ->
            if is_last rest && not linked then Ok (path, info)
            else walk path ~linked rest
        | Ok info ->
            if not (is_last rest) then Error File.Not_found
            else if linked then
              with_path path (checked services ~root path ~linked)
            else Ok (path, info))
  in
  walk root ~linked:false segs

(* [now], the time, is for the two-digit years of RFC 850 dates. A clock
   read is nothing next to the system calls that find the file. *)
let file ~dates ~now (req : Request.t) path (info : File.info) =
  let last_modified = Date_cache.http_date dates info.mtime in
  if precondition_failed ~now req ~mtime:info.mtime then
    Response.Private.trusted
      ~headers:[ ("Last-Modified", last_modified) ]
      412 Empty
  else if not_modified ~now req ~mtime:info.mtime then
    Response.Private.trusted
      ~headers:[ ("Last-Modified", last_modified) ]
      304 Empty
  else
    let headers =
      [
        ("Content-Type", content_type path);
        ("Last-Modified", last_modified);
        ("Accept-Ranges", "bytes");
      ]
    in
    let size = info.size in
    let whole () =
      Response.Private.trusted ~headers 200
        (File { path; info; offset = 0; length = size })
    in
    (* RFC 9110 §14.2: GET is the only method that defines range handling,
       and a server MUST ignore Range with any other, HEAD included. *)
    let range =
      match req.meth with GET -> Request.header req "range" | _ -> None
    in
    match range with
    | None -> whole ()
    | Some _ when not (range_applies req ~mtime:info.mtime ~now) -> whole ()
    | Some field -> (
        match Range.resolve field ~size with
        | Whole -> whole ()
        | Part { first; last } ->
            Response.Private.trusted
              ~headers:
                (("Content-Range", Range.content_range ~first ~last ~size)
                :: headers)
              206
              (File { path; info; offset = first; length = last - first + 1 })
        | Unsatisfiable ->
            Response.Private.trusted
              ~headers:
                [
                  ("Content-Range", Range.unsatisfied_range ~size);
                  ("Last-Modified", last_modified);
                ]
              416 Empty)

let serve services ~root ~index ~dates (req : Request.t) ~path ~query =
  match req.meth with
  | GET | HEAD -> (
      match Url_path.resolve path with
      | Error e -> Response.error 400 (Url_path.error_to_string e)
      | Ok segs -> (
          match locate services ~root segs with
          | Error e -> file_error e
          | Ok (full, ({ kind = Regular; _ } as info)) ->
              (* A file is not a directory: /1k.txt/ names nothing. *)
              if String.ends_with ~suffix:"/" path then Response.error 404 ""
              else file ~dates ~now:(services.Services.now ()) req full info
          | Ok (_, { kind = Directory; _ }) -> (
              if not (String.ends_with ~suffix:"/" path) then
                let location = Url_path.of_segments segs ^ "/" in
                Response.redirect
                  (match query with
                  | None -> location
                  | Some q -> location ^ "?" ^ q)
              else
                match locate services ~root (segs @ [ index ]) with
                | Ok (file_path, ({ kind = Regular; _ } as info)) ->
                    file ~dates ~now:(services.Services.now ()) req file_path
                      info
                | Ok _ | Error File.Not_found -> Response.error 403 ""
                | Error e -> file_error e)
          | Ok _ -> Response.error 403 ""))
  | _ -> Response.error ~headers:[ ("Allow", "GET, HEAD") ] 405 ""
