open Braid_http

type segment = Literal of string | Param of string | Rest of string

type route = {
  meth : Method.t;
  pattern : segment list;
  handler : Handler.t;
  max_body : int option;
}

type t = route list (* in order of addition *)

type found =
  | Found of {
      handler : Handler.t;
      params : (string * string) list;
      max_body : int option;
    }
  | Method_not_allowed of Method.t list
  | Not_found

let empty = []
let is_empty = function [] -> true | _ :: _ -> false

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
  t @ [ { meth; pattern = parse_pattern pattern; handler; max_body } ]

(* Parameters bound by matching, or [None]. *)
let rec matches pattern segs params =
  match (pattern, segs) with
  | [], [] -> Some params
  | Literal l :: p, s :: rest when String.equal l s -> matches p rest params
  | Param name :: p, s :: rest when s <> "" ->
      matches p rest ((name, s) :: params)
  | [ Rest name ], rest -> Some ((name, String.concat "/" rest) :: params)
  | _ -> None

let order =
  Method.[ GET; HEAD; POST; PUT; DELETE; PATCH; OPTIONS; CONNECT; TRACE ]

let allow methods =
  String.concat ", "
    (List.filter_map
       (fun m -> if List.mem m methods then Some (Method.to_string m) else None)
       order)

let lookup t meth path =
  if is_empty t then Not_found
  else
    match Url_path.segments path with
    | Error _ -> Not_found
    | Ok segs -> (
        let routes = t in
        let find meth =
          List.find_map
            (fun r ->
              if r.meth = meth then
                match matches r.pattern segs [] with
                | Some params ->
                    Some
                      (Found
                         {
                           handler = r.handler;
                           params = List.rev params;
                           max_body = r.max_body;
                         })
                | None -> None
              else None)
            routes
        in
        match find meth with
        | Some found -> found
        | None -> (
            match if meth = Method.HEAD then find Method.GET else None with
            | Some found -> found
            | None ->
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
                  Method_not_allowed (List.sort_uniq compare allowed)))
