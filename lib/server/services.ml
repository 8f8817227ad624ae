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

(* Each answer is one closure built per [run], not per effect: [effc] parks
   the effect's argument in a cell and returns the prebuilt closure, which
   the handler calls at once (nothing can run in between). So answering an
   effect allocates nothing beyond the continuation the runtime makes. *)
let run (type a) (services : Capabilities.t) (f : unit -> a) : a =
  let open Effect.Deep in
  let fail k e =
    discontinue_with_backtrace k e (Printexc.get_raw_backtrace ())
  in
  let event = ref (Log.Message { level = Debug; text = "" }) in
  let log =
    Some
      (fun (k : (unit, a) continuation) ->
        match services.log !event with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let now =
    Some
      (fun (k : (float, a) continuation) ->
        match services.now () with v -> continue k v | exception e -> fail k e)
  in
  let follow = ref false and path = ref "" in
  let stat =
    Some
      (fun k ->
        match services.stat ~follow:!follow !path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let realpath =
    Some
      (fun k ->
        match services.realpath !path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let info = ref no_info in
  let open_file =
    Some
      (fun k ->
        match services.open_file !path !info with
        | v -> continue k v
        | exception e -> fail k e)
  in
  let meth = ref Braid_http.Method.GET in
  let find_handler =
    Some
      (fun k ->
        match services.find_handler !meth !path with
        | v -> continue k v
        | exception e -> fail k e)
  in
  try_with f ()
    {
      effc =
        (fun (type b) (e : b Effect.t) : ((b, a) continuation -> a) option ->
          match e with
          | Log e ->
              event := e;
              log
          | Now -> now
          | Stat s ->
              follow := s.follow;
              path := s.path;
              stat
          | Realpath p ->
              path := p;
              realpath
          | Open_file (p, i) ->
              path := p;
              info := i;
              open_file
          | Find_handler (m, p) ->
              meth := m;
              path := p;
              find_handler
          | Logged c ->
              event := c.event;
              log
          | Lookup c ->
              meth := c.meth;
              path := c.path;
              find_handler
          | Stat_cell c ->
              follow := c.follow;
              path := c.path;
              stat
          | Open_cell c ->
              path := c.path;
              info := c.info;
              open_file
          | _ -> None);
    }

module Perform = struct
  let nothing : Log.event = Message { level = Debug; text = "" }

  type env = {
    cell : cell;
    logged : unit Effect.t;
    lookup : Router.found Effect.t;
    stat : (File.info, File.error) result Effect.t;
    open_file : (File.contents, File.error) result Effect.t;
  }

  let env () =
    let cell =
      { event = nothing; meth = GET; path = ""; follow = false; info = no_info }
    in
    {
      cell;
      logged = Logged cell;
      lookup = Lookup cell;
      stat = Stat_cell cell;
      open_file = Open_cell cell;
    }

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
    env.cell.path <- path;
    env.cell.info <- info;
    Effect.perform env.open_file

  let find_handler env meth path =
    env.cell.meth <- meth;
    env.cell.path <- path;
    Effect.perform env.lookup
end
