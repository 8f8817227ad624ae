type cell = {
  mutable event : Log.event;
  mutable meth : Braid_http.Method.t;
  mutable path : string;
  mutable follow : bool;
  mutable info : File.info;
}

type _ Effect.t +=
  | Log : Log.event -> unit Effect.t
  | Now : float Effect.t
  | Stat : {
      follow : bool;
      path : string;
    }
      -> (File.info, File.error) result Effect.t
  | Realpath : string -> (string, File.error) result Effect.t
  | Open_file :
      string * File.info
      -> (File.contents, File.error) result Effect.t
  | Find_handler : Braid_http.Method.t * string -> Router.found Effect.t
  | Logged : cell -> unit Effect.t
  | Lookup : cell -> Router.found Effect.t
  | Stat_cell : cell -> (File.info, File.error) result Effect.t
  | Open_cell : cell -> (File.contents, File.error) result Effect.t

let no_info =
  { File.kind = Other; size = 0; mtime = 0.; ctime = 0.; device = 0; inode = 0 }

let nothing : Log.event = Message { level = Debug; text = "" }

let new_cell () =
  { event = nothing; meth = GET; path = ""; follow = false; info = no_info }

(* Each reply is one closure built per [run], not per effect: [effc] points
   [current] at the cell holding the effect's arguments (the performer's own,
   or [own] for the plain constructors) and returns the prebuilt reply, which
   the handler calls at once (nothing can run in between). Answering an
   effect thus allocates nothing beyond the runtime's continuation. *)
let run (type a) (services : Capabilities.t) (f : unit -> a) : a =
  let open Effect.Deep in
  let fail k e =
    discontinue_with_backtrace k e (Printexc.get_raw_backtrace ())
  in
  let own = new_cell () in
  let current = ref own in
  let log =
    Some
      (fun (k : (unit, a) continuation) ->
        match services.log !current.event with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let now =
    Some
      (fun (k : (float, a) continuation) ->
        match services.now () with v -> continue k v | exception e -> fail k e)
  in
  let stat =
    Some
      (fun k ->
        let c = !current in
        match services.stat ~follow:c.follow c.path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let realpath =
    Some
      (fun k ->
        match services.realpath !current.path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let open_file =
    Some
      (fun k ->
        let c = !current in
        match services.open_file c.path c.info with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let find_handler =
    Some
      (fun k ->
        let c = !current in
        match services.find_handler c.meth c.path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  (* A write barrier only when the cell changes (a handler usually serves
     one connection, whose cell is always the same). *)
  let point c = if !current != c then current := c in
  let mine () =
    point own;
    own
  in
  try_with f ()
    {
      effc =
        (fun (type b) (e : b Effect.t) : ((b, a) continuation -> a) option ->
          match e with
          | Lookup c ->
              point c;
              find_handler
          | Stat_cell c ->
              point c;
              stat
          | Open_cell c ->
              point c;
              open_file
          | Logged c ->
              point c;
              log
          | Now -> now
          | Log e ->
              (mine ()).event <- e;
              log
          | Stat s ->
              let c = mine () in
              c.follow <- s.follow;
              c.path <- s.path;
              stat
          | Realpath p ->
              (mine ()).path <- p;
              realpath
          | Open_file (p, i) ->
              let c = mine () in
              c.path <- p;
              c.info <- i;
              open_file
          | Find_handler (m, p) ->
              let c = mine () in
              c.meth <- m;
              c.path <- p;
              find_handler
          | _ -> None);
    }

module Perform = struct
  type env = {
    services : Capabilities.t;
    cell : cell;
    logged : unit Effect.t;
    lookup : Router.found Effect.t;
    stat : (File.info, File.error) result Effect.t;
    open_file : (File.contents, File.error) result Effect.t;
  }

  let env services =
    let cell = new_cell () in
    {
      services;
      cell;
      logged = Logged cell;
      lookup = Lookup cell;
      stat = Stat_cell cell;
      open_file = Open_cell cell;
    }

  let run env f = run env.services f

  let log env event =
    env.cell.event <- event;
    Effect.perform env.logged;
    (* Do not keep the request alive until the next one. *)
    env.cell.event <- nothing

  let now _ = Effect.perform Now

  let stat env ~follow path =
    env.cell.follow <- follow;
    env.cell.path <- path;
    Effect.perform env.stat

  let realpath _ path = Effect.perform (Realpath path)

  let open_file env path info =
    (* Usually the path [stat] just wrote. *)
    if env.cell.path != path then env.cell.path <- path;
    env.cell.info <- info;
    Effect.perform env.open_file

  let find_handler env meth path =
    env.cell.meth <- meth;
    env.cell.path <- path;
    Effect.perform env.lookup
end
