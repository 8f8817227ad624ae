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

(* A path's metadata as asked for during one poll of the loop: the answer
   comes from a pool thread, and every request of that poll waits for the
   same one. *)
type looked_up = {
  poll : int;
  found : (File.info, File.error) result Braid_sync.Promise.t;
}

(* Keyed by path with [String.equal]: the generic table's polymorphic
   comparison costs more than the lookup on every request. *)
module Paths = Hashtbl.Make (String)

type t = {
  settings : settings;
  home : Domain.id;
      (** The only domain that touches [cache], [stats] and [lstats]. *)
  cache : cached Paths.t;
  stats : looked_up Paths.t;  (** Links followed. *)
  lstats : looked_up Paths.t;
  mutable last_lstat : (string * looked_up) option;
  mutable last_cached : (string * cached) option;
      (** The last path looked up in [lstats] and in [cache], and what was
          found: a crowd asks for one file, and comparing its path is cheaper
          than hashing it. *)
  mutable cached_lookups : bool;
      (** [Braid_io.File_access.open_if_cached] works here; false once the
          kernel said it has no [openat2] or [RESOLVE_CACHED]. *)
}

let create settings =
  {
    settings;
    home = Domain.self ();
    cache = Paths.create 64;
    stats = Paths.create 64;
    lstats = Paths.create 64;
    last_lstat = None;
    last_cached = None;
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
let look_up ~follow path =
  let answer = Braid_sync.Promise.create () in
  ignore
    (Braid.Fiber.fork (fun () ->
         Braid_sync.Promise.fill answer
           (match off_loop (fun () -> system_stat ~follow path) with
           | found -> found
           | exception e ->
               (* The pool refused the call (shut down, or no domain left):
                  the requests waiting for this look get a 500, not a hang. *)
               Error (File.Failed (Printexc.to_string e))))
      : unit Braid.Fiber.handle);
  answer

(* The requests one poll of the loop woke share one look at each path, as
   h2o's file cache does: a keep-alive crowd asking for the same file costs
   one system call per poll, not one per request, and a change made before
   a request arrived is seen by it. Elsewhere (a pool task, a systhread)
   each call looks. *)
let stat t ~follow path =
  match
    if (Domain.self () :> int) = (t.home :> int) then Braid_io.polls ()
    else None
  with
  | None -> off_loop (fun () -> system_stat ~follow path)
  | Some poll ->
      let seen =
        (* The static server's lookups are lstats; the last one answers a
           crowd asking for one file without hashing its path. *)
        match t.last_lstat with
        | Some (last_path, last)
          when (not follow) && last.poll = poll && String.equal last_path path
          ->
            last
        | _ -> (
            let table = if follow then t.stats else t.lstats in
            match Paths.find_opt table path with
            | Some seen when seen.poll = poll ->
                if not follow then t.last_lstat <- Some (path, seen);
                seen
            | _ ->
                if Paths.length table >= max_looked_up then Paths.reset table;
                let found =
                  match stat_if_cached t ~follow path with
                  | Some answer ->
                      let known = Braid_sync.Promise.create () in
                      Braid_sync.Promise.fill known answer;
                      known
                  | None -> look_up ~follow path
                in
                let seen = { poll; found } in
                Paths.replace table path seen;
                if not follow then t.last_lstat <- Some (path, seen);
                seen)
      in
      Braid_sync.Promise.await seen.found

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
    | Some c ->
        info.size <= c.max_file_size
        && (Domain.self () :> int) = (t.home :> int)
    | None -> false
  in
  let recent =
    if not cacheable then None
    else
      match t.last_cached with
      | Some (last_path, last) when String.equal last_path path -> Some last
      | _ -> (
          match Paths.find_opt t.cache path with
          | Some c as found ->
              t.last_cached <- Some (path, c);
              found
          | None -> None)
  in
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
                 if Paths.length t.cache >= c.max_entries then
                   Paths.reset t.cache;
                 let entry = { version = now; content } in
                 Paths.replace t.cache path entry;
                 t.last_cached <- Some (path, entry)
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
