type node =
  | Dir of { mtime : float; inode : int }
  | Regular of { content : string; mtime : float; inode : int }
  | Link of string

type t = {
  mutable now : float;
  nodes : (string, node) Hashtbl.t;  (** By canonical path. *)
  mutable next_inode : int;
  router : Router.t;
  mutable events : Log.event list;  (** Newest first. *)
  mutable lookups : (Braid_http.Method.t * string) list;
}

let create ?(now = 1_000_000_000.) ?(router = Router.empty) () =
  let nodes = Hashtbl.create 16 in
  Hashtbl.replace nodes "/" (Dir { mtime = now; inode = 1 });
  { now; nodes; next_inode = 2; router; events = []; lookups = [] }

let set_now t now = t.now <- now
let events t = List.rev t.events
let lookups t = List.rev t.lookups

let components path =
  List.filter (fun c -> c <> "" && c <> ".") (String.split_on_char '/' path)

let join dir name = if dir = "/" then "/" ^ name else dir ^ "/" ^ name

let parent path =
  match String.rindex_opt path '/' with
  | None | Some 0 -> "/"
  | Some i -> String.sub path 0 i

let inode t =
  t.next_inode <- t.next_inode + 1;
  t.next_inode

(* Paths given to [add_*] are taken literally (no links followed). *)
let rec ensure_dir t path =
  if not (Hashtbl.mem t.nodes path) then (
    ensure_dir t (parent path);
    Hashtbl.replace t.nodes path (Dir { mtime = t.now; inode = inode t }))

let canonical path = "/" ^ String.concat "/" (components path)

let add t path node =
  let path = canonical path in
  ensure_dir t (parent path);
  Hashtbl.replace t.nodes path node

let add_file t ?mtime path content =
  let mtime = Option.value mtime ~default:t.now in
  add t path (Regular { content; mtime; inode = inode t })

let add_directory t ?mtime path =
  let mtime = Option.value mtime ~default:t.now in
  add t path (Dir { mtime; inode = inode t })

let add_symlink t path ~target = add t path (Link target)
let remove t path = Hashtbl.remove t.nodes (canonical path)

(* The kernel's path walk: intermediate links are always followed, the last
   one only with [follow]; 40 links at most. *)
let resolve t ~follow path =
  let rec walk ~links dir = function
    | [] -> (
        match Hashtbl.find_opt t.nodes dir with
        | Some node -> Ok (dir, node)
        | None -> Error File.Not_found)
    | ".." :: rest -> walk ~links (parent dir) rest
    | name :: rest -> (
        let here = join dir name in
        match Hashtbl.find_opt t.nodes here with
        | None -> Error File.Not_found
        | Some (Link target) when rest <> [] || follow ->
            if links >= 40 then Error File.Not_found
            else
              let start =
                if String.length target > 0 && target.[0] = '/' then "/"
                else dir
              in
              walk ~links:(links + 1) start (components target @ rest)
        | Some (Regular _) when rest <> [] -> Error File.Not_found
        | Some _ -> walk ~links here rest)
  in
  if String.length path = 0 || path.[0] <> '/' then
    Error (File.Failed "relative path")
  else walk ~links:0 "/" (components path)

let info_of = function
  | Dir { mtime; inode } ->
      {
        File.kind = Directory;
        size = 0;
        mtime;
        ctime = mtime;
        device = 0;
        inode;
      }
  | Regular { content; mtime; inode } ->
      {
        kind = Regular;
        size = String.length content;
        mtime;
        ctime = mtime;
        device = 0;
        inode;
      }
  | Link target ->
      {
        kind = Symlink;
        size = String.length target;
        mtime = 0.;
        ctime = 0.;
        device = 0;
        inode = 0;
      }

let stat t ~follow path =
  Result.map (fun (_, n) -> info_of n) (resolve t ~follow path)

let realpath t path = Result.map fst (resolve t ~follow:true path)

let open_file t path (_ : File.info) =
  match resolve t ~follow:true path with
  | Ok (_, Regular { content; _ }) -> Ok (File.In_memory content)
  | Ok _ -> Error File.Forbidden
  | Error _ as e -> e

let capabilities t : Capabilities.t =
  {
    log = (fun e -> t.events <- e :: t.events);
    now = (fun () -> t.now);
    stat = stat t;
    realpath = realpath t;
    open_file = open_file t;
    find_handler =
      (fun meth path ->
        t.lookups <- (meth, path) :: t.lookups;
        Router.lookup t.router meth path);
  }
