module Channel = Braid_sync.Channel

type entry = Access of string | Error_line of string
type paths = { access : string option; error : string option }

(* A destination, touched only by the writer fiber. [path = None] means no
   access log, or standard error for the error log. *)
type sink = {
  mutable path : string option;
  mutable fd : Unix.file_descr option;
  mutable failing : bool;  (** A problem was reported and not yet resolved. *)
  buf : Buffer.t;
  mutable lines : int;
}

type t = {
  channel : entry Channel.t;
  paths : paths Atomic.t;
  dropped : int Atomic.t;
  restarts : int Atomic.t;
  running : bool Atomic.t;
  write : Unix.file_descr -> bytes -> int -> int -> int;
  now : unit -> float;  (** Stamps the writer's own notes. *)
  batch : int;
  check_interval : float;
  access_sink : sink;
  error_sink : sink;
  mutable current : paths;  (** The paths the sinks were opened for. *)
  mutable reported : int;  (** [dropped] when last reported. *)
}

let sink () =
  {
    path = None;
    fd = None;
    failing = false;
    buf = Buffer.create 4096;
    lines = 0;
  }

let create ?(capacity = 4096) ?(batch = 1024) ?(check_interval = 1.)
    ?(write = Unix.single_write) ?(now = Unix.gettimeofday) ?access ?error () =
  if capacity <= 0 then invalid_arg "Log_writer.create: capacity";
  if batch <= 0 then invalid_arg "Log_writer.create: batch";
  let paths = { access; error } in
  {
    channel = Channel.create capacity;
    paths = Atomic.make paths;
    dropped = Atomic.make 0;
    restarts = Atomic.make 0;
    running = Atomic.make false;
    write;
    now;
    batch;
    check_interval;
    access_sink = sink ();
    error_sink = sink ();
    (* Opened by the writer's first [sync_paths]. *)
    current = { access = None; error = None };
    reported = 0;
  }

let set_paths t ~access ~error = Atomic.set t.paths { access; error }
let logs_access t = Option.is_some (Atomic.get t.paths).access
let dropped t = Atomic.get t.dropped
let restarts t = Atomic.get t.restarts
let drop t n = if n > 0 then ignore (Atomic.fetch_and_add t.dropped n)

let enqueue t e =
  match Channel.try_send t.channel e with
  | true -> ()
  | false | (exception Channel.Closed) -> drop t 1

(* The id of the request the caller serves, if any: producers call from the
   request's fiber (the logging service runs in the fiber that logs), where
   the server bound it. *)
let request_id () =
  match Braid_web.Log.Request_id.current () with
  | Some id -> Some (Braid_web.Log.Request_id.to_string id)
  | None -> None

let access t line =
  if logs_access t then
    match request_id () with
    | Some id -> enqueue t (Access (line ^ " \"" ^ id ^ "\""))
    | None -> enqueue t (Access line)

let timestamp time =
  let tm = Unix.gmtime time in
  Printf.sprintf "[%04d-%02d-%02dT%02d:%02d:%02dZ] " (tm.tm_year + 1900)
    (tm.tm_mon + 1) tm.tm_mday tm.tm_hour tm.tm_min tm.tm_sec

let error t ~time text =
  match request_id () with
  | Some id -> enqueue t (Error_line (timestamp time ^ "[" ^ id ^ "] " ^ text))
  | None -> enqueue t (Error_line (timestamp time ^ text))

(* {1 The writer's side} *)

let add sink line =
  Buffer.add_string sink.buf line;
  Buffer.add_char sink.buf '\n';
  sink.lines <- sink.lines + 1

(* A message of the writer itself, written with the next batch. *)
let note t text = add t.error_sink (timestamp (t.now ()) ^ text)

let close_sink sink =
  Option.iter
    (fun fd -> try Unix.close fd with Unix.Unix_error _ -> ())
    sink.fd;
  sink.fd <- None

let describe = function
  | Unix.Unix_error (e, _, _) -> Unix.error_message e
  | e -> Printexc.to_string e

(* Problems are reported once, when they start and when they end, not at
   every retry. *)
let open_sink t sink =
  match sink.path with
  | None -> ()
  | Some path -> (
      match
        Unix.openfile path [ O_WRONLY; O_APPEND; O_CREAT; O_CLOEXEC ] 0o644
      with
      | fd ->
          sink.fd <- Some fd;
          if sink.failing then (
            sink.failing <- false;
            note t ("info: log: writing to " ^ path ^ " again"))
      | exception (Unix.Unix_error _ as e) ->
          if not sink.failing then (
            sink.failing <- true;
            note t
              (Printf.sprintf
                 "error: log: cannot open %s: %s; its lines are dropped until \
                  it can be"
                 path (describe e))))

let sync_paths t =
  let wanted = Atomic.get t.paths in
  if wanted != t.current then (
    t.current <- wanted;
    let switch sink path =
      if sink.path <> path then (
        close_sink sink;
        sink.path <- path;
        sink.failing <- false;
        open_sink t sink)
    in
    switch t.access_sink wanted.access;
    switch t.error_sink wanted.error)

(* Does [path] still name the file [fd] is open on? Deleted or renamed away
   (log rotation): no, and the path gets a new file. *)
let same_file path fd =
  match (Unix.stat path, Unix.fstat fd) with
  | a, b -> a.st_dev = b.st_dev && a.st_ino = b.st_ino
  | exception Unix.Unix_error _ -> false

let check_sink t sink =
  match (sink.path, sink.fd) with
  | Some path, Some fd when not (same_file path fd) ->
      close_sink sink;
      note t ("info: log: " ^ path ^ " was moved or deleted; reopened");
      open_sink t sink
  | Some _, None -> open_sink t sink
  | _ -> ()

let report_drops t =
  let n = Atomic.get t.dropped in
  if n <> t.reported then (
    note t
      (Printf.sprintf
         "error: log: %d lines dropped (queue full or log unwritable), %d in \
          total"
         (n - t.reported) n);
    t.reported <- n)

let rec write_all t fd bytes off len =
  if len > 0 then
    let n = t.write fd bytes off len in
    write_all t fd bytes (off + n) (len - n)

(* Empties [sink]'s buffer into its file. Error lines go to standard error
   when there is no error log file, or while it cannot be opened. A failed write drops the batch and closes the file; it is
   reopened at once, or at a later check. *)
let flush_sink t sink =
  if sink.lines > 0 then (
    let bytes = Buffer.to_bytes sink.buf and lines = sink.lines in
    Buffer.clear sink.buf;
    sink.lines <- 0;
    let fd =
      match sink.fd with
      | Some _ as fd -> fd
      | None when sink == t.error_sink -> Some Unix.stderr
      | None -> None
    in
    match fd with
    | None -> drop t lines
    | Some fd -> (
        match write_all t fd bytes 0 (Bytes.length bytes) with
        | () -> ()
        | exception (Unix.Unix_error _ as e) -> (
            drop t lines;
            match sink.path with
            | None -> ()
            | Some path ->
                close_sink sink;
                sink.failing <- true;
                note t
                  (Printf.sprintf "error: log: writing %s failed: %s" path
                     (describe e));
                open_sink t sink)
        | exception e ->
            drop t lines;
            raise e))

let flush t =
  flush_sink t t.access_sink;
  flush_sink t t.error_sink;
  (* A failed write to the error log leaves a note about it. *)
  if t.error_sink.lines > 0 then flush_sink t t.error_sink

let take t = function
  | Access line -> if t.access_sink.path <> None then add t.access_sink line
  | Error_line line -> add t.error_sink line

(* Up to [n] more entries, without waiting. *)
let rec take_more t n =
  if n > 0 then
    match Channel.try_recv t.channel with
    | Some e ->
        take t e;
        take_more t (n - 1)
    | None -> ()

let after seconds =
  match Mtime.Span.of_float_ns (seconds *. 1e9) with
  | Some span -> (
      match Mtime.add_span (Braid_io.Time.now ()) span with
      | Some t -> t
      | None -> Braid_io.Time.now ())
  | None -> Braid_io.Time.now ()

let next t ~next_check =
  match Channel.try_recv t.channel with
  | Some _ as e -> e
  | None ->
      let now = Braid_io.Time.now () in
      if Mtime.is_later now ~than:next_check then None
      else
        let wait = Mtime.Span.to_float_ns (Mtime.span now next_check) /. 1e9 in
        Braid_io.Time.timeout wait (fun () -> Channel.recv t.channel)

let rec work t ~next_check =
  sync_paths t;
  (match next t ~next_check with
  | Some e ->
      take t e;
      take_more t (t.batch - 1)
  | None -> ());
  sync_paths t;
  flush t;
  let next_check =
    if Mtime.is_later (Braid_io.Time.now ()) ~than:next_check then (
      check_sink t t.access_sink;
      check_sink t t.error_sink;
      report_drops t;
      flush t;
      after t.check_interval)
    else next_check
  in
  work t ~next_check

(* Shielded from cancellation: only [try_recv] and writes, nothing waits. *)
let drain t =
  (* Bounded: producers may still be sending. *)
  let rec go rounds =
    take_more t t.batch;
    flush t;
    if rounds > 0 && Channel.length t.channel > 0 then go (rounds - 1)
  in
  (try
     sync_paths t;
     go (Channel.capacity t.channel / t.batch);
     report_drops t;
     flush t
   with e ->
     prerr_endline ("braid: log: flushing the logs failed: " ^ describe e));
  close_sink t.access_sink;
  close_sink t.error_sink;
  (* A later [run] opens them again. *)
  t.current <- { access = None; error = None };
  t.access_sink.path <- None;
  t.error_sink.path <- None

let run t =
  if not (Atomic.compare_and_set t.running false true) then
    invalid_arg "Log_writer.run: already running";
  let rec supervise () =
    match work t ~next_check:(after t.check_interval) with
    | () -> ()
    | exception Braid.Cancelled -> ()
    | exception e ->
        let lost = t.access_sink.lines + t.error_sink.lines in
        Buffer.clear t.access_sink.buf;
        Buffer.clear t.error_sink.buf;
        t.access_sink.lines <- 0;
        t.error_sink.lines <- 0;
        drop t lost;
        Atomic.incr t.restarts;
        note t
          (Printf.sprintf "error: log: the log writer failed (%s); restarted"
             (Printexc.to_string e));
        (* A writer failing at once again must not spin. *)
        (match Braid_io.Time.sleep 0.01 with
        | () -> ()
        | exception Braid.Cancelled -> ());
        if Braid.Fiber.is_cancelled () then () else supervise ()
  in
  Fun.protect
    ~finally:(fun () -> Atomic.set t.running false)
    (fun () ->
      supervise ();
      Braid.Fiber.protect (fun () -> drain t);
      raise Braid.Cancelled)
