(** Static files from a document root.

    Safety rules: the request path is percent-decoded once, segment by segment;
    a segment decoding to something holding ["/"] or NUL, a bad escape, or a
    [".."] climbing above the root is refused with [400] (so [..], [%2e%2e],
    [%2F] and [..%2f] all fail); then each segment is looked up with [lstat],
    and if any of them is a symbolic link the resolved path ([realpath]) must
    lie inside the root, else [403]. Special files (FIFOs, devices, sockets) are
    refused with [403] and never opened. The root itself must be given without
    symbolic links ([Braid_server.Config.root]).

    The checks and the [open] are separate system calls: someone who can write
    inside the root could swap a directory for a link between them. The root is
    therefore assumed not to be writable by adversaries ([openat2] with
    [RESOLVE_BENEATH] would close that window).

    Responses: [200] with [Content-Type] (from the file name, magic-mime),
    [Accept-Ranges: bytes] and the validators: a strong [ETag] made of the
    file's inode, size and modification time
    ({!Braid_http.Entity_tag.of_version}) and [Last-Modified]. The conditions in
    RFC 9110 §13.2.2's order: [412] when [If-Match] (strong comparison; [*]
    holds) fails, or without it when [If-Unmodified-Since] is older than the
    file; then [304] when [If-None-Match] (weak comparison; [*] matches)
    matches, or without it when [If-Modified-Since] is not older than the file.
    A malformed [If-Match] or [If-None-Match] is ignored. On a GET (HEAD ignores
    [Range], RFC 9110 §14.2), a single satisfiable [Range] gives [206] with
    [Content-Range], an unsatisfiable one [416] with
    [Content-Range: bytes */size], several ranges the whole file
    ({!Braid_http.Range}); [If-Range] must strongly match the [ETag] or equal
    [Last-Modified] for the range to apply. A regular file named with a trailing
    slash ([/a.txt/]) is [404], as nginx answers. A directory is served through
    its index file; without a trailing slash it is redirected ([301]) to the
    path with one. No index: [403]. Methods other than GET and HEAD: [405] with
    [Allow: GET, HEAD]. *)

val serve :
  Services.t ->
  root:string ->
  index:string ->
  ?precompressed:bool ->
  ?base:string ->
  dates:Head_cache.t ->
  Braid_http.Request.t ->
  path:string ->
  query:string option ->
  Response.t
(** [serve services ~root ~index ~dates request ~path ~query] answers [request]
    for the raw (not decoded) [path] from the files under [root], through the
    file services of [services]; [dates] formats [Last-Modified]. Blocks as
    those services do.

    With [precompressed] (default [false]), a file [F] is answered with [F.br],
    else [F.gz], when that is a regular file (not a link) beside [F] and the
    request's Accept-Encoding accepts its coding
    ({!Braid_http.Content_coding.accepted}; no field, no coding): the variant's
    bytes and validators, [F]'s [Content-Type], [Content-Encoding]; never for a
    request with [Range]. Every file response then carries
    [Vary: Accept-Encoding].

    [base] (default [""]) is put before the path of a directory's redirect: the
    prefix a mounted {!handler} is under. *)

val handler :
  ?index:string -> ?precompressed:bool -> root:string -> unit -> Handler.t
(** [handler ~root ()] serves the files under [root] as a route, with everything
    the server's fallback for unrouted requests has (that same code): the safety
    rules, [Content-Type], [ETag] and [Last-Modified], [304] and [412] on the
    conditions, [Range] and [If-Range], precompressed variants (with
    [precompressed], default [false]), the index file ([index], default
    ["index.html"]) and the redirect of a directory, and the file services in
    force (so [Braid_server.Real_services]'s file cache, and its file-system
    calls off the event loop).

    Mounted on a pattern ending in [*name] it serves the path that [*name]
    matched ({!Handler.request}'s [tail]):
    [Router.get "/assets/*path" (Static.handler ~root:"www" ())] answers
    [/assets/css/a.css] with [www/css/a.css]; a directory's redirect keeps the
    prefix. On another pattern it serves the request's whole path. A [tail] that
    is not the end of the request's path (set by a handler or middleware) is
    served as well, but a directory named without a trailing slash is then a
    [404], not a redirect (its URL is not known); see {!file} for one file the
    application chose. Errors ([403], [404], [405]) go through
    {!Router.on_error} like the fallback's.

    A relative [root] is taken from the current directory now (no file-system
    call). [root] must not hold symbolic links (as [Braid_server.Config.root]):
    resolve it with [Unix.realpath] first if it may. Blocks the handler's fiber
    as the file services do.

    Make the handler once (when the routes are built), not per request: it
    keeps, for each domain that runs it, the formatted fields of the files it
    last served. *)

val file : Handler.request -> string -> Response.t
(** [file request path] sends the file at [path], which the application chose
    (an attachment, once it has checked that the user may see it): not a path
    from the request, and not under a document root, so none of the safety rules
    above apply, and links are followed. As a static file otherwise (the same
    code): [Content-Type] from [path]'s name, [ETag] and [Last-Modified], [304]
    and [412] on the conditions, [Range] and [If-Range] on a GET, the file
    services in force (sendfile(2) for a large file on a socket). [404] if
    [path] names nothing, or a directory (never a listing, an index or a
    redirect); [403] for a special file, or one the server may not read (found
    when it opens it). Errors go through {!Router.on_error}. Add
    [Content-Disposition] with {!Response.with_header} to offer a download.
    Blocks the handler's fiber as the file services do.
    {[
      (* [find r id]: the file of attachment [id] if [r]'s user may see it,
         from the application's records, never a path built from the
         request (a parameter is decoded: it may hold "../"). *)
      let attachment ~find r =
        match Option.bind (Handler.param r "id") (find r) with
        | Some path -> Static.file r path
        | None -> Response.error 404 ""
    ]} *)

val file_error : File.error -> Response.t
(** The answer to a file that cannot be served: [404], [403] or [500]. *)

val content_type : string -> string
(** [content_type file_name] is the MIME type of a file name's extension
    (magic-mime), [application/octet-stream] if unknown. *)
