(* The log-tailing service: follow a log file, run a command for each new line
   that matches, and report each run as a one-line JSON summary, by UDP to a
   collector and appended to a file.

   Every piece is a fiber of one event loop and none of them blocks it: the
   file is read on the Blocking pool (File, Path), commands are children
   awaited through their pidfd (Process), the collector's name is resolved on
   the pool (Net.resolve) and summaries leave as datagrams (Udp). *)

open Braid_io

type config = {
  log : string;
  pattern : string;  (** A line matches if it contains this ("" matches all). *)
  command : string;  (** Run by [/bin/sh -c], the line on its stdin. *)
  collector : (string * int) option;  (** Host (name or IP) and UDP port. *)
  output : string;  (** Summaries are appended here; "-" is stdout. *)
  jobs : int;  (** Commands running at once, at most. *)
  timeout : float;  (** Seconds a command may run before it is killed. *)
  poll : float;  (** Seconds between looks at an idle log. *)
  from_start : bool;  (** Read the log's current contents too. *)
  exit_after : int option;  (** Stop after this many events. *)
}

let contains ~pattern line =
  let n = String.length pattern and m = String.length line in
  let rec at i = i + n <= m && (same i 0 || at (i + 1))
  and same i j = j = n || (line.[i + j] = pattern.[j] && same i (j + 1)) in
  at 0

(* {1 Summaries} *)

(* A JSON string literal, escaped by yojson. *)
let json_string s = Yojson.Safe.to_string (`String s)

(* Lines and outputs are cut so that a summary always fits in a datagram. *)
let clip n s = if String.length s <= n then s else String.sub s 0 n

(* Everything but the duration, which varies: the self-test compares these. *)
let summary_prefix ~line ~status ~output =
  Printf.sprintf {|{"line":%s,"status":%s,"output":%s,"ms":|}
    (json_string (clip 1000 line))
    (json_string status) (json_string output)

let summary ~line ~status ~output ~ms =
  Printf.sprintf "%s%d}" (summary_prefix ~line ~status ~output) ms

let status_string = function
  | Unix.WEXITED n -> Printf.sprintf "exit %d" n
  | WSIGNALED s | WSTOPPED s ->
      let names = [ (Sys.sigkill, "KILL"); (Sys.sigterm, "TERM") ] in
      Printf.sprintf "signal %s"
        (Option.value (List.assoc_opt s names) ~default:(string_of_int s))

(* {1 Running a command} *)

let max_output = 200

(* Reads [fd] to its end and keeps the first [max_output] bytes: the rest is
   read and dropped, so that a chatty command never stalls on a full pipe. *)
let read_clipped fd =
  let buf = Bytes.create 4096 and kept = Buffer.create max_output in
  let rec go () =
    match Fd.read_into fd buf 0 4096 with
    | 0 -> Buffer.contents kept
    | n ->
        Buffer.add_subbytes kept buf 0
          (max 0 (min n (max_output - Buffer.length kept)));
        go ()
  in
  go ()

(* Runs [command] with [line] on its stdin; returns its status and output. *)
let run_command ~timeout command line =
  let run () =
    (* The child belongs to this switch: when the timeout cancels the switch,
       the switch kills (SIGKILL) and reaps it before [Time.timeout] returns. *)
    Switch.run @@ fun sw ->
    let p =
      Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe "/bin/sh" [ "-c"; command ]
    in
    (* Feed stdin from a fiber of its own while this one reads stdout: a
       command that writes before it has read all its input cannot deadlock
       with us. *)
    ignore
      (Fiber.fork ~sw (fun () ->
           (try Fd.write_string (Process.stdin p) (line ^ "\n")
            with Io_error { error = EPIPE; _ } ->
              (* The command exited without reading its input: its business,
                 and its exit status tells the story. *)
              ());
           Fd.close (Process.stdin p)));
    let output = read_clipped (Process.stdout p) in
    (status_string (Process.await p), String.trim output)
  in
  match Time.timeout timeout run with
  | Some result -> result
  | None -> ("timeout", "")
  (* A command that cannot start (no /bin/sh, no descriptors left) or whose
     pipes fail is an event like any other, not the end of the service. *)
  | exception (Io_error _ as e) ->
      (Printf.sprintf "error: %s" (Option.get (error_message e)), "")

(* {1 Reporting} *)

(* Returns the function that reports one summary. The collector's name is
   resolved once, at start; summaries go to the first address the resolver
   prefers, from an unconnected socket: fire and forget, as syslog does (a
   connected socket would turn a collector that is down into ECONNREFUSED on
   later sends). *)
let reporter ~sw config =
  let write =
    if config.output = "-" then
      (* Standard output may be a pipe to a slow reader: write it on the
         Blocking pool, one summary at a time. (Reopening /dev/stdout as a
         File would not share descriptor 1's offset, nor work on a socket.) *)
      let lock = Braid_sync.Mutex.create () in
      fun s ->
        Braid_sync.Mutex.protect lock (fun () ->
            Blocking.run (fun () ->
                ignore (Unix.write_substring Unix.stdout s 0 (String.length s))))
    else
      File.write_string
        (File.open_out ~sw ~append:true ~create:(`If_missing 0o644)
           config.output)
  in
  let udp =
    Option.map
      (fun (host, port) ->
        match Net.resolve host port with
        | [] -> raise (Net.Unknown_host host)
        | (ADDR_INET (ip, _) as addr) :: _ ->
            let family = if Unix.is_inet6_addr ip then `Ipv6 else `Ipv4 in
            (Udp.create ~sw family, addr)
        | ADDR_UNIX _ :: _ -> invalid_arg "Net.resolve gave a Unix address")
      config.collector
  in
  fun summary ->
    (match udp with
    | None -> ()
    | Some (socket, addr) -> (
        let b = Bytes.of_string summary in
        try Udp.send_to socket addr b 0 (Bytes.length b)
        with Io_error _ as e ->
          (* Losing a datagram is what UDP allows; the file still has it. *)
          Printf.eprintf "log_tail: %s\n%!" (Option.get (error_message e))));
    write (summary ^ "\n")

(* {1 Following the log} *)

(* Follows [path] as [tail -F] does, calling [on_line] for each complete line
   (without its newline), and never returns. The file is read from the offset
   reached so far; once at its end, [Path.stat] tells whether the name now
   points to another file (rotation: finish the old one, read the new one from
   its start) or whether the file shrank below our offset (truncation: start
   over). A file rewritten to at least its old size is not noticed. *)
let follow ~sw ~poll ~from_start ~ready path on_line =
  let buf = Bytes.create 65536 and partial = Buffer.create 256 in
  let emit () =
    let line = Buffer.contents partial in
    Buffer.clear partial;
    on_line line
  in
  let split n =
    let start = ref 0 in
    for i = 0 to n - 1 do
      if Bytes.get buf i = '\n' then (
        Buffer.add_subbytes partial buf !start (i - !start);
        emit ();
        start := i + 1)
    done;
    Buffer.add_subbytes partial buf !start (n - !start)
  in
  let rec drain file offset =
    match File.pread file buf 0 (Bytes.length buf) ~file_offset:offset with
    | 0 -> offset
    | n ->
        split n;
        drain file (offset + n)
  in
  let rec open_log () =
    match File.open_in ~sw path with
    | file -> file
    | exception Io_error { error = ENOENT; _ } ->
        Time.sleep poll;
        open_log ()
  in
  let rec watch file (st : Unix.stats) offset =
    let offset = drain file offset in
    match Path.stat path with
    | exception Io_error { error = ENOENT; _ } ->
        (* Renamed away, and the new file is not there yet. *)
        Time.sleep poll;
        watch file st offset
    | now when now.st_ino <> st.st_ino || now.st_dev <> st.st_dev ->
        (* Rotated. Its writer may have added a last line since [drain];
           then the old file will not grow any more, and its unterminated end
           is a line too. *)
        ignore (drain file offset);
        if Buffer.length partial > 0 then emit ();
        File.close file;
        let file = open_log () in
        watch file (File.stat file) 0
    | now when now.st_size < offset ->
        (* Truncated: what we kept of a line was overwritten. *)
        Buffer.clear partial;
        watch file st 0
    | _ ->
        Time.sleep poll;
        watch file st offset
  in
  let file, start =
    match File.open_in ~sw path with
    | file -> (file, if from_start then `Start else `End)
    | exception Io_error { error = ENOENT; _ } ->
        (* Created after we started: all of it is new. *)
        (open_log (), `Start)
  in
  let st = File.stat file in
  ready ();
  watch file st (if start = `Start then 0 else st.st_size)

(* {1 The service} *)

(* Runs until [exit_after] events, SIGINT or SIGTERM. [ready] is called once
   the log is open and its starting offset known. *)
let run ?(ready = ignore) config =
  ignore @@ Switch.run_stoppable
  @@ fun sw ->
  let report = reporter ~sw config in
  let jobs = Braid_sync.Semaphore.make config.jobs in
  let events = ref 0 in
  ignore
    (Fiber.fork ~sw (fun () ->
         ignore (Signal.await [ Sys.sigint; Sys.sigterm ]);
         Switch.stop sw));
  (* Each matching line gets a fiber at once, which waits for one of the
     [jobs] permits: the tailer never waits for a command. The price is a
     fiber per line waiting for its turn when lines come faster than commands
     finish. *)
  let on_line line =
    if contains ~pattern:config.pattern line then
      ignore
        (Fiber.fork ~sw (fun () ->
             Braid_sync.Semaphore.acquire jobs;
             let t0 = Time.now_ns () in
             let status, output =
               Fun.protect
                 ~finally:(fun () -> Braid_sync.Semaphore.release jobs)
                 (fun () ->
                   run_command ~timeout:config.timeout config.command line)
             in
             let ms = (Time.now_ns () - t0) / 1_000_000 in
             report (summary ~line ~status ~output ~ms);
             incr events;
             if Some !events = config.exit_after then Switch.stop sw))
  in
  follow ~sw ~poll:config.poll ~from_start:config.from_start ~ready config.log
    on_line
