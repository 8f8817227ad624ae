type node =
  | Dir of { mtime : float; inode : int }
  | Regular of { content : string; mtime : float; inode : int }
  | Link of string

type alarm = { deadline : int; id : int; action : unit -> unit }

(* Every field is guarded by [lock], held only for the data structure
   operations (never while an alarm's action runs or a fiber waits). *)
type t = {
  lock : Mutex.t;
  mutable now : float;
  mutable monotonic : int;  (** Nanoseconds since [create]. *)
  mutable alarms : alarm list;  (** By deadline, then by id. *)
  mutable next_alarm : int;
  nodes : (string, node) Hashtbl.t;  (** By canonical path. *)
  mutable next_inode : int;
  router : Router.t;
  mutable events : Log.event list;  (** Newest first. *)
  mutable lookups : (Braid_http.Method.t * string) list;
  spool : Spool_budget.t;
}

let create ?(now = 1_000_000_000.) ?(router = Router.empty)
    ?(spool = Spool_budget.create ()) () =
  let nodes = Hashtbl.create 16 in
  Hashtbl.replace nodes "/" (Dir { mtime = now; inode = 1 });
  {
    lock = Mutex.create ();
    now;
    monotonic = 0;
    alarms = [];
    next_alarm = 0;
    nodes;
    next_inode = 2;
    router;
    events = [];
    lookups = [];
    spool;
  }

let locked t f = Mutex.protect t.lock f
let set_now t now = locked t (fun () -> t.now <- now)
let events t = locked t (fun () -> List.rev t.events)
let lookups t = locked t (fun () -> List.rev t.lookups)

(* {1 Clock} *)

let ns_of seconds =
  if Float.is_nan seconds then invalid_arg "In_memory: NaN duration";
  int_of_float (Float.max 0. (Float.min (seconds *. 1e9) 1e18))

let add_alarm t ~after action =
  locked t (fun () ->
      let id = t.next_alarm in
      t.next_alarm <- id + 1;
      let alarm = { deadline = t.monotonic + ns_of after; id; action } in
      let before a =
        a.deadline < alarm.deadline
        || (a.deadline = alarm.deadline && a.id < alarm.id)
      in
      let rec insert = function
        | a :: rest when before a -> a :: insert rest
        | rest -> alarm :: rest
      in
      t.alarms <- insert t.alarms;
      id)

let remove_alarm t id =
  locked t (fun () -> t.alarms <- List.filter (fun a -> a.id <> id) t.alarms)

let pending_timers t = locked t (fun () -> List.length t.alarms)

let advance t seconds =
  let due =
    locked t (fun () ->
        t.monotonic <- t.monotonic + ns_of seconds;
        t.now <- t.now +. seconds;
        let due, later =
          List.partition (fun a -> a.deadline <= t.monotonic) t.alarms
        in
        t.alarms <- later;
        due)
  in
  List.iter (fun a -> a.action ()) due

let sleep t seconds =
  if seconds <= 0. then Braid.Fiber.yield ()
  else
    let woken = Braid_sync.Promise.create () in
    let id =
      add_alarm t ~after:seconds (fun () ->
          ignore (Braid_sync.Promise.try_fill woken (Ok ())))
    in
    match Braid_sync.Promise.await woken with
    | () -> ()
    | exception e ->
        remove_alarm t id;
        raise e

(* As [Braid_io.Time.timeout], on this clock. *)
let timeout t seconds f =
  let expired =
    Braid.Fiber.Scope.run (fun scope ->
        let id =
          add_alarm t ~after:seconds (fun () -> Braid.Fiber.Scope.cancel scope)
        in
        match f () with
        | v ->
            remove_alarm t id;
            Ok v
        | exception Braid.Cancelled when Braid.Fiber.Scope.is_cancelled scope ->
            remove_alarm t id;
            Error ()
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            remove_alarm t id;
            Printexc.raise_with_backtrace e bt)
  in
  match expired with
  | Ok v -> Some v
  | Error () ->
      (* An enclosing scope cancelled too: theirs to report. *)
      if Braid.Fiber.is_cancelled () then raise Braid.Cancelled else None

let components path =
  List.filter (fun c -> c <> "" && c <> ".") (String.split_on_char '/' path)

let join dir name = if dir = "/" then "/" ^ name else dir ^ "/" ^ name

let parent path =
  match String.rindex_opt path '/' with
  | None | Some 0 -> "/"
  | Some i -> String.sub path 0 i

(* {1 File system} *)

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
  locked t (fun () ->
      let mtime = Option.value mtime ~default:t.now in
      add t path (Regular { content; mtime; inode = inode t }))

let add_directory t ?mtime path =
  locked t (fun () ->
      let mtime = Option.value mtime ~default:t.now in
      add t path (Dir { mtime; inode = inode t }))

let add_symlink t path ~target = locked t (fun () -> add t path (Link target))
let remove t path = locked t (fun () -> Hashtbl.remove t.nodes (canonical path))

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
  locked t (fun () ->
      Result.map (fun (_, n) -> info_of n) (resolve t ~follow path))

let realpath t path =
  locked t (fun () -> Result.map fst (resolve t ~follow:true path))

let open_file t path (_ : File.info) =
  locked t (fun () ->
      match resolve t ~follow:true path with
      | Ok (_, Regular { content; _ }) -> Ok (File.In_memory content)
      | Ok _ -> Error File.Forbidden
      | Error _ as e -> e)

let services t : Services.t =
  {
    log = (fun e -> locked t (fun () -> t.events <- e :: t.events));
    now = (fun () -> locked t (fun () -> t.now));
    monotonic_ns = (fun () -> locked t (fun () -> t.monotonic));
    sleep = sleep t;
    timeout = (fun seconds f -> timeout t seconds f);
    stat = stat t;
    realpath = realpath t;
    open_file = open_file t;
    find_handler =
      (fun meth path ->
        locked t (fun () -> t.lookups <- (meth, path) :: t.lookups);
        Router.lookup t.router meth path);
    middleware = Router.wrap t.router;
    error_page = Router.render_error t.router;
    largest_max_body = Router.largest_max_body t.router;
    spool = t.spool;
  }

let run t f = Services.run (services t) f
