open Braid_http

type segment = Literal of string | Param of string | Rest of string

type route = {
  meth : Method.t;
  pattern : segment list;
  handler : Handler.t;
  max_body : int option;
}

type middleware = Handler.t -> Handler.t
type error_page = Request.t option -> Response.t -> Response.t

type t = {
  routes : route list; (* in order of addition *)
  middleware : middleware list; (* outermost first *)
  error_page : error_page option;
}

type found =
  | Found of {
      handler : Handler.t;
      params : (string * string) list;
      tail : string option;
      max_body : int option;
    }
  | Method_not_allowed of Method.t list
  | Not_found

let empty = { routes = []; middleware = []; error_page = None }

let is_empty t =
  match (t.routes, t.middleware, t.error_page) with
  | [], [], None -> true
  | _ -> false

let parse_pattern pattern =
  let bad why = invalid_arg ("Router.add: " ^ why ^ ": " ^ pattern) in
  if pattern = "" || pattern.[0] <> '/' then bad "pattern must start with /";
  let raw =
    match String.split_on_char '/' pattern with
    | "" :: [ "" ] -> [] (* "/" *)
    | "" :: segs -> segs
    | _ -> assert false
  in
  let rec go = function
    | [] -> []
    | seg :: rest -> (
        let n = String.length seg in
        if n > 0 && seg.[0] = ':' then
          if n = 1 then bad "empty parameter name"
          else Param (String.sub seg 1 (n - 1)) :: go rest
        else if n > 0 && seg.[0] = '*' then
          if rest <> [] then bad "* must be the last segment"
          else [ Rest (String.sub seg 1 (n - 1)) ]
        else
          match Url_path.percent_decode seg with
          | Ok lit -> Literal lit :: go rest
          | Error _ -> bad "bad percent-encoding")
  in
  go raw

let add ?max_body meth pattern handler t =
  (match max_body with
  | Some m when m < 0 -> invalid_arg "Router.add: negative max_body"
  | _ -> ());
  {
    t with
    routes =
      t.routes
      @ [ { meth; pattern = parse_pattern pattern; handler; max_body } ];
  }

let largest_max_body t =
  List.fold_left
    (fun acc r ->
      match (acc, r.max_body) with
      | None, m -> m
      | Some a, Some m when m > a -> Some m
      | acc, _ -> acc)
    None t.routes

let get pattern handler t = add GET pattern handler t
let post pattern handler t = add POST pattern handler t

let apply middleware handler =
  List.fold_right (fun m h -> m h) middleware handler

let scope ?(middleware = []) prefix sub t =
  let prefix =
    if String.ends_with ~suffix:"/" prefix then
      String.sub prefix 0 (String.length prefix - 1)
    else prefix
  in
  let prefix = if prefix = "" then [] else parse_pattern prefix in
  (match List.rev prefix with
  | Rest _ :: _ -> invalid_arg "Router.scope: a prefix cannot end with *name"
  | _ -> ());
  (* The scope's middleware, then the sub-router's own, around each route. *)
  let middleware = middleware @ sub.middleware in
  let routes =
    List.map
      (fun r ->
        {
          r with
          pattern = prefix @ r.pattern;
          handler = apply middleware r.handler;
        })
      sub.routes
  in
  { t with routes = t.routes @ routes }

let use m t = { t with middleware = t.middleware @ [ m ] }
let wrap t handler = apply t.middleware handler
let on_error page t = { t with error_page = Some page }

(* The page keeps what the server's answer must say: the methods allowed
   (405) and that the connection closes. *)
let render_error t req (default : Response.t) =
  match t.error_page with
  | None -> default
  | Some page ->
      let r = page req default in
      List.fold_left
        (fun r name ->
          match (Response.header default name, Response.header r name) with
          | Some v, None -> Response.with_header name v r
          | _ -> r)
        r [ "Allow"; "Connection" ]

(* Parameters bound by matching, or [None]; [depth] counts the segments
   before a [*name]. *)
let rec matches ?(depth = 0) pattern segs params =
  match (pattern, segs) with
  | [], [] -> Some (params, None)
  | Literal l :: p, s :: rest when String.equal l s ->
      matches ~depth:(depth + 1) p rest params
  | Param name :: p, s :: rest when s <> "" ->
      matches ~depth:(depth + 1) p rest ((name, s) :: params)
  | [ Rest name ], rest ->
      Some ((name, String.concat "/" rest) :: params, Some depth)
  | _ -> None

(* The raw path after its first [depth] segments, with its leading "/":
   the raw segments are the decoded ones before decoding, one for one. *)
let tail_of path depth =
  let rec skip i n =
    if n = 0 then i
    else
      match String.index_from_opt path (i + 1) '/' with
      | Some j -> skip j (n - 1)
      | None -> String.length path
  in
  let i = skip 0 depth in
  if i >= String.length path then "/"
  else String.sub path i (String.length path - i)

let order =
  Method.[ GET; HEAD; POST; PUT; DELETE; PATCH; OPTIONS; CONNECT; TRACE ]

let allow methods =
  String.concat ", "
    (List.filter_map
       (fun m -> if List.mem m methods then Some (Method.to_string m) else None)
       order)

(* Whether [lit] from [i] is [path] from [i + 1]: top-level, as a local
   function would be a closure made per call. *)
let rec same_from lit path i n =
  i >= n
  || String.unsafe_get lit i = String.unsafe_get path (i + 1)
     && same_from lit path (i + 1) n

(* Whether [lit] is [path]'s substring from 1 to [stop], not cut out. *)
let first_segment_is path stop lit =
  let n = String.length lit in
  n = stop - 1 && same_from lit path 0 n

(* Whether a route may match [path], whose first segment (no escapes in it)
   ends at [stop]: one whose pattern begins with another literal cannot.
   The path of a request that no route serves (a static file's, on every
   request the fallback answers) is then not split here, only there. *)
let rec may_match path stop = function
  | [] -> false
  | { pattern = Literal lit :: _; _ } :: rest ->
      first_segment_is path stop lit || may_match path stop rest
  | _ :: _ -> true

(* Where the segment from [i] ends: no option allocated. *)
let rec segment_end path i n =
  if i >= n || String.unsafe_get path i = '/' then i
  else segment_end path (i + 1) n

(* Only the first segment must be free of "%": it alone is compared with
   the routes' first literals; Url_path.segments scans the rest. *)
let no_route_for routes path =
  let n = String.length path in
  n > 0
  && String.unsafe_get path 0 = '/'
  &&
  let stop = segment_end path 1 n in
  (not (Url_path.has_percent path 1 stop)) && not (may_match path stop routes)

(* The first route for [meth] that matches, or [Not_found]: a function of
   its own rather than closures made per lookup. *)
let rec find_route meth path segs = function
  | [] -> Not_found
  | r :: rest -> (
      if r.meth <> meth then find_route meth path segs rest
      else
        match matches r.pattern segs [] with
        | Some (params, depth) ->
            Found
              {
                handler = r.handler;
                params = List.rev params;
                tail =
                  (match depth with
                  | Some depth -> Some (tail_of path depth)
                  | None -> None);
                max_body = r.max_body;
              }
        | None -> find_route meth path segs rest)

let lookup t meth path =
  match t.routes with
  | [] -> Not_found
  | routes when no_route_for routes path -> Not_found
  | routes -> (
      match Url_path.segments path with
      | Error _ -> Not_found
      | Ok segs -> (
          match find_route meth path segs routes with
          | Found _ as found -> found
          | Method_not_allowed _ | Not_found -> (
              match
                if meth = Method.HEAD then
                  find_route Method.GET path segs routes
                else Not_found
              with
              | Found _ as found -> found
              | Method_not_allowed _ | Not_found ->
                  let allowed =
                    List.filter_map
                      (fun r ->
                        if matches r.pattern segs [] <> None then Some r.meth
                        else None)
                      routes
                  in
                  if allowed = [] then Not_found
                  else
                    let allowed =
                      if List.mem Method.GET allowed then Method.HEAD :: allowed
                      else allowed
                    in
                    Method_not_allowed (List.sort_uniq compare allowed))))
