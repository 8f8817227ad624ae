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

(* Whether any field name starts with "If-": most requests carry no
   condition, and then none of the four lookups below is worth making. *)
let rec conditions_from h i =
  i < Headers.length h
  &&
  let name = Headers.name h i in
  String.length name > 3
  && Char.lowercase_ascii (String.unsafe_get name 0) = 'i'
  && Char.lowercase_ascii (String.unsafe_get name 1) = 'f'
  && String.unsafe_get name 2 = '-'
  || conditions_from h (i + 1)

let has_conditions (req : Request.t) = conditions_from req.headers 0

(* [String.ends_with] makes a closure per call. *)
let ends_with_slash path =
  let n = String.length path in
  n > 0 && String.unsafe_get path (n - 1) = '/'

(* [suffix] ends [s], compared from [i] (counting from the end) on; without
   the closure of [String.ends_with]. *)
let rec ends_with suffix s i =
  i > String.length suffix
  || String.unsafe_get suffix (String.length suffix - i)
     = String.unsafe_get s (String.length s - i)
     && ends_with suffix s (i + 1)

let is_suffix ~suffix s =
  String.length suffix <= String.length s && ends_with suffix s 1

(* The conditions below run only for a request that has some
   ([has_conditions]): they work out the file's tag, and read the clock for
   RFC 850 dates' two-digit years, only when a field needs them. *)
let tag_of (info : File.info) =
  Entity_tag.of_version ~inode:info.inode ~size:info.size ~mtime:info.mtime

let date_of services v = Http_date.parse ~now:(services.Services.now ()) v

(* RFC 9110 §13.2.2, steps 1 and 2: If-Match (strong comparison,
   §13.1.1), else If-Unmodified-Since (ignored unless it is one valid date,
   §13.1.4). A malformed If-Match is ignored. *)
let precondition_failed services (req : Request.t) (info : File.info) =
  match Entity_tag.condition (Headers.find_all req.headers "if-match") with
  | Some condition ->
      not (Entity_tag.holds condition (Entity_tag.strong_match (tag_of info)))
  | None -> (
      match Headers.find_all req.headers "if-unmodified-since" with
      | [ v ] -> (
          match date_of services v with
          | Some date -> Float.floor info.mtime > date
          | None -> false)
      | _ -> false)

(* Steps 3 and 4: If-None-Match (weak comparison, §13.1.2), else
   If-Modified-Since, which an If-None-Match field (even a malformed one)
   turns off (§13.1.3). *)
let not_modified services (req : Request.t) (info : File.info) =
  match Headers.find_all req.headers "if-none-match" with
  | _ :: _ as lines -> (
      match Entity_tag.condition lines with
      | Some condition ->
          Entity_tag.holds condition (Entity_tag.weak_match (tag_of info))
      | None -> false)
  | [] -> (
      (* RFC 9110 §13.1.3: ignored unless it is one valid date; two field
         lines are a list of two members. *)
      match Headers.find_all req.headers "if-modified-since" with
      | [ v ] -> (
          match date_of services v with
          | Some since -> Float.floor info.mtime <= since
          | None -> false)
      | _ -> false)

(* If-Range (§13.1.5): an entity tag that strongly matches, or the exact
   Last-Modified date, lets the range apply. *)
let range_applies services (req : Request.t) (info : File.info) =
  match Headers.find_all req.headers "if-range" with
  | [] -> true
  | [ v ] -> (
      match Entity_tag.of_string v with
      | Some tag -> Entity_tag.strong_match tag (tag_of info)
      | None -> (
          match date_of services v with
          | Some date -> Float.equal date (Float.floor info.mtime)
          | None -> false))
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
let with_path path = function Ok info -> Ok (path, info) | Error _ as e -> e

let rec walk services ~root dir ~linked = function
  | [] -> with_path dir (checked services ~root dir ~linked)
  | seg :: rest -> (
      let path = join dir seg in
      match services.Services.stat ~follow:false path with
      | Error _ as e -> e
      | Ok { kind = Symlink; _ } -> walk services ~root path ~linked:true rest
      | Ok ({ kind = Directory; _ } as info) ->
          if is_last rest && not linked then Ok (path, info)
          else walk services ~root path ~linked rest
      | Ok info ->
          if not (is_last rest) then Error File.Not_found
          else if linked then
            with_path path (checked services ~root path ~linked)
          else Ok (path, info))

let locate services ~root segs = walk services ~root root ~linked:false segs

(* Precompressed variants, as nginx's gzip_static: FILE.br, else FILE.gz,
   a regular file (a link is not followed) beside FILE, when the client
   accepts its coding (RFC 9110 §12.5.3). Never for a Range request: a range
   of one representation must not be cut from another. The variant's own
   metadata gives its validators, so its ETag differs from FILE's. *)
let variants = [ ("br", ".br"); ("gzip", ".gz") ]

let variant services (req : Request.t) path =
  if Option.is_some (Request.header req "range") then None
  else
    match Headers.find_all req.headers "accept-encoding" with
    | [] -> None
    | lines ->
        List.find_map
          (fun (coding, suffix) ->
            if Content_coding.accepted lines coding then
              let file = path ^ suffix in
              match services.Services.stat ~follow:false file with
              | Ok ({ kind = Regular; _ } as info) -> Some (coding, file, info)
              | Ok _ | Error _ -> None
            else None)
          variants

(* Worked out only when needed: a crowd asking for one file gets its fields
   from the cache (Head_cache.file_fields). *)
let validators dates (info : File.info) ~precompressed =
  let v =
    [
      ("ETag", Head_cache.etag dates info);
      ("Last-Modified", Head_cache.http_date dates info.mtime);
    ]
  in
  (* The answer depends on Accept-Encoding wherever variants are served. *)
  if precompressed then ("Vary", "Accept-Encoding") :: v else v

let fields_of dates name info ~coding ~precompressed =
  ("Content-Type", Head_cache.content_type dates name ~lookup:content_type)
  :: ("Accept-Ranges", "bytes")
  :: (coding @ validators dates info ~precompressed)

let whole ~headers path (info : File.info) =
  Response.Private.trusted ~headers 200
    (File { path; info; offset = 0; length = info.size })

let respond services ~precompressed ~dates (req : Request.t) name
    (info : File.info) =
  (* [name] gives the type; [path] and [info] the bytes sent. *)
  let path, info, coding =
    match if precompressed then variant services req name else None with
    | Some (coding, file, variant_info) ->
        (file, variant_info, [ ("Content-Encoding", coding) ])
    | None -> (name, info, [])
  in
  let conditional = has_conditions req in
  if conditional && precondition_failed services req info then
    Response.Private.trusted
      ~headers:(validators dates info ~precompressed)
      412 Empty
  else if conditional && not_modified services req info then
    (* A 304 carries the validators a 200 would (§15.4.5). *)
    Response.Private.trusted
      ~headers:(validators dates info ~precompressed)
      304 Empty
  else
    (* A crowd asking for one file gets the same list each time, which the
       pipeline then writes as the text it wrote last (Head_cache.rendered). *)
    let headers =
      match coding with
      | [] -> (
          match Head_cache.file_fields dates name info ~vary:precompressed with
          | Some fields -> fields
          | None ->
              let fields = fields_of dates name info ~coding ~precompressed in
              Head_cache.keep_file_fields dates name info ~vary:precompressed
                fields;
              fields)
      | _ :: _ -> fields_of dates name info ~coding ~precompressed
    in
    let size = info.size in
    (* RFC 9110 §14.2: GET is the only method that defines range handling,
       and a server MUST ignore Range with any other, HEAD included. *)
    let range =
      match req.meth with GET -> Request.header req "range" | _ -> None
    in
    match range with
    | None -> whole ~headers path info
    | Some _ when conditional && not (range_applies services req info) ->
        whole ~headers path info
    | Some field -> (
        match Range.resolve field ~size with
        | Whole -> whole ~headers path info
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
                  ("Last-Modified", Head_cache.http_date dates info.mtime);
                ]
              416 Empty)

(* [base]: the prefix of the directory's redirect; without [redirect] (its
   URL is not known), a directory named without its trailing slash is 404.
   Not a [string option]: no allocation on the fallback's path. *)
let serve_under services ~root ~index ~precompressed ~redirect ~base ~dates
    (req : Request.t) ~path ~query =
  match req.meth with
  | GET | HEAD -> (
      match Url_path.resolve path with
      | Error e -> Response.error 400 (Url_path.error_to_string e)
      | Ok segs -> (
          match locate services ~root segs with
          | Error e -> file_error e
          | Ok (full, ({ kind = Regular; _ } as info)) ->
              (* A file is not a directory: /1k.txt/ names nothing. *)
              if ends_with_slash path then Response.error 404 ""
              else respond services ~precompressed ~dates req full info
          | Ok (_, { kind = Directory; _ }) -> (
              if not (ends_with_slash path) then
                if not redirect then Response.error 404 ""
                else
                  let location = base ^ Url_path.of_segments segs ^ "/" in
                  Response.redirect
                    (match query with
                    | None -> location
                    | Some q -> location ^ "?" ^ q)
              else
                match locate services ~root (segs @ [ index ]) with
                | Ok (file_path, ({ kind = Regular; _ } as info)) ->
                    respond services ~precompressed ~dates req file_path info
                | Ok _ | Error File.Not_found -> Response.error 403 ""
                | Error e -> file_error e)
          | Ok _ -> Response.error 403 ""))
  | _ -> Response.error ~headers:[ ("Allow", "GET, HEAD") ] 405 ""

let serve services ~root ~index ?(precompressed = false) ?(base = "") ~dates req
    ~path ~query =
  serve_under services ~root ~index ~precompressed ~redirect:true ~base ~dates
    req ~path ~query

(* A handler's errors get the application's page, as the fallback's do. *)
let with_error_page (services : Services.t) (r : Handler.request)
    (response : Response.t) =
  if response.status >= 400 then services.error_page (Some r.head) response
  else response

(* The application named the file: no root, no index, no redirect. Links are
   followed, as the application's own [open] would. *)
let file (r : Handler.request) path =
  let services = Services.current () in
  with_error_page services r
    (match services.stat ~follow:true path with
    | Error e -> file_error e
    | Ok ({ kind = Regular; _ } as info) ->
        respond services ~precompressed:false ~dates:(Head_cache.create ())
          r.head path info
    | Ok { kind = Directory; _ } -> Response.error 404 ""
    | Ok _ -> Response.error 403 "")

let handler ?(index = "index.html") ?(precompressed = false) ~root () =
  let root =
    if Filename.is_relative root then Filename.concat (Sys.getcwd ()) root
    else root
  in
  let root =
    if String.length root > 1 && String.ends_with ~suffix:"/" root then
      String.sub root 0 (String.length root - 1)
    else root
  in
  (* A cache of this handler's own on each domain that runs it: one made per
     request formatted the dates and the tag, and looked the type up, on
     every request, and allocated its tables each time. *)
  let dates = Domain.DLS.new_key Head_cache.create in
  fun (r : Handler.request) ->
    (* The tail is the end of the path when the router set it; one a
       handler or middleware made up may not be: its files are served, but
       a directory's URL is not known (no redirect). *)
    let path, redirect, base =
      match r.tail with
      | Some tail when is_suffix ~suffix:tail r.path ->
          ( tail,
            true,
            String.sub r.path 0 (String.length r.path - String.length tail) )
      | Some tail -> (tail, false, "")
      | None -> (r.path, true, "")
    in
    let services = Services.current () in
    let response =
      serve_under services ~root ~index ~precompressed ~redirect ~base
        ~dates:(Domain.DLS.get dates) r.head ~path ~query:r.query
    in
    with_error_page services r response
