open Braid_web

type file_cache = { max_file_size : int; max_entries : int }

type settings = {
  router : Router.t;
  log_level : Log_event.level;
  access_log : (string -> unit) option;
  logger : Log_writer.t option;
  file_cache : file_cache option;
  cached_lookups : bool;
  metrics : Metrics.t option;
  spool : Spool_budget.t;
}

(* Measured at 100 keep-alive connections (issue 16): a 20 or 40 KiB file
   costs 2 to 4 us less CPU per request from the cache than by sendfile
   (its open, fstat and close remain), a 64 KiB one more than it saves (the
   copy into the socket): files from 48 KiB go by sendfile. *)
let default_file_cache = { max_file_size = 49152; max_entries = 1024 }

let settings ?(log_level = Log_event.Warning) ?access_log ?logger
    ?(file_cache = Some default_file_cache) ?(cached_lookups = true) ?metrics
    ?(spool = Spool_budget.create ()) router =
  {
    router;
    log_level;
    access_log;
    logger;
    file_cache;
    cached_lookups;
    metrics;
    spool;
  }

type cached = { version : File.info; content : string }

(* A look at a path: answered at once on the loop's thread when the kernel
   had the path in its caches, else by a pool thread. *)
type answer =
  | Known of (File.info, File.error) result
  | Waiting of (File.info, File.error) result Braid_sync.Promise.t

(* What the home domain knows of a path: its metadata as asked for during
   one poll of the loop (every request of that poll shares the one answer),
   and, in [lstats], the file's content if cached. One record per path, so
   that a request finds both with one hash of its path (none when it asks
   for the path the previous request asked for). *)
type looked_up = {
  mutable poll : int;  (** The poll of [found]; [-1]: none yet. *)
  mutable found : answer;
  mutable cached : cached option;
}

(* Keyed by path with [String.equal]: the generic table's polymorphic
   comparison costs more than the lookup on every request. *)
module Paths = Hashtbl.Make (String)

type t = {
  settings : settings;
  home : Domain.id;
      (** The only domain that touches [stats], [lstats] and the fields below.
      *)
  stats : looked_up Paths.t;  (** Links followed. *)
  lstats : looked_up Paths.t;
      (** Links not followed (the static server's lookups), and the file cache:
          the path a file is opened by is the one it was looked up by. *)
  mutable cached_files : int;  (** Entries of [lstats] holding content. *)
  mutable last_path : string;
  mutable last : looked_up option;
      (** The entry of [lstats] last used, and its path: a crowd asks for one
          file, and comparing its path (physically first: the static server
          opens the very string it looked up) is cheaper than hashing it. *)
  mutable cached_lookups : bool;
      (** [Braid_io.File_access.open_if_cached] works here; false once the
          kernel said it has no [openat2] or [RESOLVE_CACHED]. *)
}

let create settings =
  {
    settings;
    home = Domain.self ();
    stats = Paths.create 64;
    lstats = Paths.create 64;
    cached_files = 0;
    last_path = "";
    last = None;
    cached_lookups = settings.cached_lookups;
  }

(* Entries of the metadata tables: as many as the file cache's. *)
let max_looked_up = 1024

let rank = function
  | Log_event.Error -> 0
  | Warning -> 1
  | Info -> 2
  | Debug -> 3

let log t (event : Log_event.event) =
  match event with
  | Access a -> (
      (match t.settings.metrics with
      | Some m -> Metrics.observe m a ~now:(Unix.gettimeofday ())
      | None -> ());
      (match t.settings.logger with
      | Some w when Log_writer.logs_access w ->
          Log_writer.access w (Log_event.combined a)
      | _ -> ());
      match t.settings.access_log with
      | None -> ()
      | Some write -> write (Log_event.combined a))
  | Message _ | Handler_failed _ -> (
      if rank (Log_event.level event) <= rank t.settings.log_level then
        match t.settings.logger with
        | Some w ->
            Log_writer.error w ~time:(Log_event.time event)
              (Log_event.to_string event)
        | None -> prerr_endline (Log_event.to_string event))

let monotonic_ns = Braid_io.Time.now_ns

let error_of (e : Unix.error) : File.error =
  match e with
  | ENOENT | ENOTDIR | ENAMETOOLONG | ELOOP -> Not_found
  | EACCES | EPERM -> Forbidden
  | e -> Failed (Unix.error_message e)

let info_of (st : Unix.stats) : File.info =
  {
    kind =
      (match st.st_kind with
      | S_REG -> Regular
      | S_DIR -> Directory
      | S_LNK -> Symlink
      | S_CHR | S_BLK | S_FIFO | S_SOCK -> Other);
    size = st.st_size;
    mtime = st.st_mtime;
    ctime = st.st_ctime;
    device = st.st_dev;
    inode = st.st_ino;
  }

let system_stat ~follow path =
  match if follow then Unix.stat path else Unix.lstat path with
  | st -> Ok (info_of st)
  | exception Unix.Unix_error (e, _, _) -> Error (error_of e)

(* Every file-system call runs on a thread of the fiber's Blocking pool: a
   disk that stalls delays the requests that wait for it, never the loop and
   the other connections. *)
let off_loop ?dispose call = Braid_io.Blocking.run ?dispose call

(* On the loop's thread, a path the kernel has in its caches is looked at
   (or opened) at once: [openat2] with [RESOLVE_CACHED] refuses with EAGAIN
   what would wait for a disk, and only that goes to the pool. [None]: ask
   the pool.
   Only on [t]'s home domain, which alone touches [t.cached_lookups]. *)
let open_if_cached t path how =
  if (not t.cached_lookups) || (Domain.self () :> int) <> (t.home :> int) then
    None
  else
    match Braid_io.File_access.open_if_cached path how with
    | fd -> Some (Ok fd)
    | exception Braid_io.Io_error { error = EAGAIN; _ } -> None
    | exception Braid_io.Io_error { error = ENOSYS | EINVAL | E2BIG | EPERM; _ }
      ->
        t.cached_lookups <- false;
        None
    | exception Braid_io.Io_error { error; _ } -> Some (Error (error_of error))

let fstat_info fd =
  match Unix.fstat fd with
  | st -> Ok (info_of st)
  | exception Unix.Unix_error (e, _, _) -> Error (error_of e)

let stat_if_cached t ~follow path =
  match
    open_if_cached t path
      (if follow then Braid_io.File_access.Path_followed else Path_itself)
  with
  | None -> None
  | Some (Error _ as e) -> Some e
  | Some (Ok fd) ->
      Some
        (Fun.protect
           ~finally:(fun () -> Unix.close fd)
           (fun () -> fstat_info fd))

(* A look at [path] that belongs to no request: it runs in a fiber of its
   own, so that a request cancelled meanwhile (its connection timed out)
   cannot leave the others of its poll waiting for an answer that never
   comes. [system_stat] never raises. *)
let look_up answer ~follow path =
  ignore
    (Braid.Fiber.fork (fun () ->
         Braid_sync.Promise.fill answer
           (match off_loop (fun () -> system_stat ~follow path) with
           | found -> found
           | exception e ->
               (* The pool refused the call (shut down, or no domain left):
                  the requests waiting for this look get a 500, not a hang. *)
               Error (File.Failed (Printexc.to_string e))))
      : unit Braid.Fiber.handle)

let at_home t = (Domain.self () :> int) = (t.home :> int)

(* [lstats] holds the file cache's entries too: room for [max_looked_up]
   looks beside them. *)
let capacity t =
  match t.settings.file_cache with
  | Some c -> max_looked_up + c.max_entries
  | None -> max_looked_up

(* A table full of looks forgets them, but not the files whose content is
   cached: a client asking for many paths that name nothing must not empty
   the file cache. *)
let forget_looks t table =
  if table == t.lstats then (
    Paths.filter_map_inplace
      (fun _ e -> match e.cached with Some _ -> Some e | None -> None)
      table;
    t.last <- None)
  else Paths.reset table

(* The file cache is full: it starts again, with the looks. *)
let forget_files t =
  Paths.reset t.lstats;
  t.cached_files <- 0;
  t.last <- None

(* The entry of [path] in [table], made if missing. Only on the home
   domain. *)
let entry t table path =
  match t.last with
  | Some e
    when table == t.lstats
         && (t.last_path == path || String.equal t.last_path path) ->
      e
  | _ ->
      let e =
        match Paths.find_opt table path with
        | Some e -> e
        | None ->
            if Paths.length table >= capacity t then forget_looks t table;
            let e =
              { poll = -1; found = Known (Error Not_found); cached = None }
            in
            Paths.replace table path e;
            e
      in
      if table == t.lstats then (
        t.last_path <- path;
        t.last <- Some e);
      e

(* The requests one poll of the loop woke share one look at each path, as
   h2o's file cache does: a keep-alive crowd asking for the same file costs
   one system call per poll, not one per request, and a change made before
   a request arrived is seen by it. Elsewhere (a pool task, a systhread)
   each call looks. *)
let stat t ~follow path =
  match if at_home t then Braid_io.polls () else None with
  | None -> off_loop (fun () -> system_stat ~follow path)
  | Some poll -> (
      let e = entry t (if follow then t.stats else t.lstats) path in
      (if e.poll <> poll then
         match stat_if_cached t ~follow path with
         | Some answer ->
             e.found <- Known answer;
             e.poll <- poll
         | None ->
             (* Recorded before the look starts: a request of this poll that
               runs meanwhile waits for it rather than starting another. *)
             let answer = Braid_sync.Promise.create () in
             e.found <- Waiting answer;
             e.poll <- poll;
             look_up answer ~follow path);
      match e.found with
      | Known answer -> answer
      | Waiting answer -> Braid_sync.Promise.await answer)

let realpath path =
  off_loop (fun () ->
      match Unix.realpath path with
      | p -> Ok p
      | exception Unix.Unix_error (e, _, _) -> Error (error_of e))

(* A descriptor just opened for reading: anything but a regular file (a
   FIFO swapped in after the stat, opened without blocking) is refused. *)
let regular_only fd =
  match Unix.fstat fd with
  | { st_kind = S_REG; _ } as st -> Ok (fd, info_of st)
  | _ ->
      Unix.close fd;
      Error File.Forbidden
  | exception Unix.Unix_error (e, _, _) ->
      Unix.close fd;
      Error (error_of e)

(* On a pool thread, which may wait: see [Braid_io.File_access.open_regular_for_reading]. *)
let open_regular path =
  match Braid_io.File_access.open_regular_for_reading path with
  | exception Braid_io.Io_error { error; _ } -> Error (error_of error)
  | fd -> regular_only fd

(* Reads up to [size] bytes from the start; fewer if the file shrank. *)
let read_whole fd size =
  let buf = Bytes.create size in
  let rec go off =
    if off = size then off
    else
      match Unix.read fd buf off (size - off) with 0 -> off | n -> go (off + n)
  in
  let n = go 0 in
  if n = size then Bytes.unsafe_to_string buf else Bytes.sub_string buf 0 n

(* Reads go through a buffer of the call's own, and wait for the read even if
   the request is cancelled meanwhile (a disk read ends on its own): [close]
   must never release the descriptor while a pool thread still reads it, or
   its number, reused by the loop's next accept, would be read in its place.
   [Unix.pread] does not exist: the position is the reader's, used by one
   fiber at a time. *)
let reader fd =
  let pos = ref 0 and closed = ref false in
  let read ~offset buf off len =
    let own, n =
      Braid.Fiber.protect @@ fun () ->
      off_loop (fun () ->
          if !pos <> offset then (
            ignore (Unix.lseek fd offset SEEK_SET);
            pos := offset);
          let own = Bytes.create len in
          let n = Unix.read fd own 0 len in
          pos := !pos + n;
          (own, n))
    in
    Bytes.blit own 0 buf off n;
    n
  in
  let close () =
    if not !closed then (
      closed := true;
      Unix.close fd)
  in
  File.Reader { read; close; file = Some fd }

let open_file t path (info : File.info) =
  let cacheable =
    match t.settings.file_cache with
    | Some c -> info.size <= c.max_file_size && at_home t
    | None -> false
  in
  let recent = if not cacheable then None else (entry t t.lstats path).cached in
  match recent with
  | Some c when File.same_version c.version info ->
      Ok (File.In_memory c.content)
  | _ when not cacheable -> (
      (* A file sent from its descriptor: opened at once if the kernel has
         its path cached (the open then does no IO), else on the pool. *)
      match open_if_cached t path For_reading with
      | Some (Error _ as e) -> e
      | Some (Ok fd) -> (
          match regular_only fd with
          | Ok (fd, _) -> Ok (reader fd)
          | Error _ as e -> e)
      | None -> (
          match
            off_loop
              ~dispose:(function Ok (fd, _) -> Unix.close fd | Error _ -> ())
              (fun () -> open_regular path)
          with
          | Ok (fd, _) -> Ok (reader fd)
          | Error _ as e -> e))
  | _ -> (
      let max_size =
        match t.settings.file_cache with Some c -> c.max_file_size | None -> 0
      in
      let opened =
        off_loop
          ~dispose:(function
            | Ok (`Descriptor fd) -> Unix.close fd
            | Ok (`Content _) | Error _ -> ())
          (fun () ->
            match open_regular path with
            | Error _ as e -> e
            | Ok (fd, now) when now.size > max_size ->
                (* Grown since the stat (a large file rotated into place):
                   never read whole into memory. *)
                Ok (`Descriptor fd)
            | Ok (fd, now) -> (
                match read_whole fd now.size with
                | content ->
                    Unix.close fd;
                    Ok (`Content (now, content))
                | exception Unix.Unix_error (e, _, _) ->
                    Unix.close fd;
                    Error (error_of e)))
      in
      match opened with
      | Error _ as e -> e
      | Ok (`Descriptor fd) -> Ok (reader fd)
      | Ok (`Content (now, content)) ->
          (* Only a file still as the caller saw it is worth keeping. *)
          (if File.same_version now info then
             match t.settings.file_cache with
             | Some c ->
                 (* Looked up again: the table may have been emptied while
                    the pool read the file. *)
                 let e = entry t t.lstats path in
                 if Option.is_none e.cached then
                   if t.cached_files >= c.max_entries then (
                     forget_files t;
                     let e = entry t t.lstats path in
                     e.cached <- Some { version = now; content };
                     t.cached_files <- 1)
                   else (
                     e.cached <- Some { version = now; content };
                     t.cached_files <- t.cached_files + 1)
                 else e.cached <- Some { version = now; content }
             | None -> ());
          Ok (File.In_memory content))

let services t : Services.t =
  {
    log = log t;
    now = Unix.gettimeofday;
    monotonic_ns;
    sleep = Braid_io.Time.sleep;
    timeout = Braid_io.Time.timeout;
    stat = stat t;
    realpath;
    open_file = open_file t;
    find_handler = Router.lookup t.settings.router;
    middleware = Router.wrap t.settings.router;
    error_page = Router.render_error t.settings.router;
    largest_max_body = Router.largest_max_body t.settings.router;
    spool = t.settings.spool;
  }
