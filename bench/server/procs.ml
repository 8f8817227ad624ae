type t = { pid : int; log : string }

let free_port () =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      Unix.bind s (ADDR_INET (Unix.inet_addr_loopback, 0));
      match Unix.getsockname s with
      | ADDR_INET (_, p) -> p
      | ADDR_UNIX _ -> assert false)

let can_connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      match Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port)) with
      | () -> true
      | exception Unix.Unix_error _ -> false)

let rec waitpid flags pid =
  match Unix.waitpid flags pid with
  | r -> r
  | exception Unix.Unix_error (EINTR, _, _) -> waitpid flags pid

let read_file path =
  match In_channel.with_open_text path In_channel.input_all with
  | s -> Some s
  | exception Sys_error _ -> None

(* Children of every thread of [pid]: a process forked by a thread other
   than the main one is listed under that thread. *)
let children pid =
  let tasks = Printf.sprintf "/proc/%d/task" pid in
  match Sys.readdir tasks with
  | exception Sys_error _ -> []
  | threads ->
      List.concat_map
        (fun tid ->
          match read_file (Printf.sprintf "%s/%s/children" tasks tid) with
          | None -> []
          | Some s ->
              List.filter_map int_of_string_opt (String.split_on_char ' ' s))
        (Array.to_list threads)

(* The process and its descendants: nginx's master and workers, h2o and
   its crash handler. *)
let rec tree pid = pid :: List.concat_map tree (children pid)
let processes t = tree t.pid

(* /proc separates fields with spaces or tabs. *)
let words line =
  List.filter (( <> ) "")
    (String.split_on_char ' '
       (String.map (function '\t' -> ' ' | c -> c) (String.trim line)))

(* Inodes of the TCP sockets listening on [port] (any address), from
   /proc/net/tcp and tcp6: "sl local rem st ... uid timeout inode". *)
let listening_inodes port =
  let hex_port = Printf.sprintf ":%04X" port in
  List.concat_map
    (fun table ->
      match read_file table with
      | None -> []
      | Some s ->
          List.filter_map
            (fun line ->
              match words line with
              | _sl :: local :: _rem :: "0A" :: _ :: _ :: _ :: _uid :: _
                :: inode :: _
                when String.ends_with ~suffix:hex_port local ->
                  Some inode
              | _ -> None)
            (String.split_on_char '\n' s))
    [ "/proc/net/tcp"; "/proc/net/tcp6" ]

(* Socket inodes among the descriptors of [pid]; [None] if /proc hides
   them (another user's process). *)
let socket_inodes pid =
  let dir = Printf.sprintf "/proc/%d/fd" pid in
  match Sys.readdir dir with
  | exception Sys_error _ -> None
  | fds ->
      Some
        (List.filter_map
           (fun fd ->
             match Unix.readlink (Filename.concat dir fd) with
             | link when String.starts_with ~prefix:"socket:[" link ->
                 Some (String.sub link 8 (String.length link - 9))
             | _ -> None
             | exception Unix.Unix_error _ -> None)
           (Array.to_list fds))

(* A server left over from an aborted run, listening on the same port
   (with SO_REUSEPORT, or on another address), would answer instead of the
   one just started: every listener on [port] must belong to [t]. *)
let sockets t =
  let inodes = List.map socket_inodes (processes t) in
  if List.mem None inodes then None
  else Some (List.sort_uniq compare (List.concat_map Option.get inodes))

let check_listener t ~port =
  match sockets t with
  | None -> Ok () (* no verdict possible *)
  | Some ours -> (
      match
        List.filter
          (fun inode -> not (List.mem inode ours))
          (listening_inodes port)
      with
      | [] -> Ok ()
      | strangers ->
          Error
            (Printf.sprintf
               "port %d is listened on by another process (socket %s): stop it \
                (a server left over from an aborted run?)"
               port
               (String.concat ", " strangers)))

let spawn ?cpu ?(env = []) ~name argv ~port =
  let argv =
    match cpu with
    | Some c -> "taskset" :: "-c" :: string_of_int c :: argv
    | None -> argv
  in
  let log = Filename.temp_file ("braid-bench-" ^ name) ".log" in
  let fd = Unix.openfile log [ O_WRONLY; O_TRUNC; O_CREAT ] 0o600 in
  let null = Unix.openfile "/dev/null" [ O_RDONLY ] 0 in
  let environment =
    Array.append
      (Array.of_list (List.map (fun (k, v) -> k ^ "=" ^ v) env))
      (Unix.environment ())
  in
  let pid =
    Unix.create_process_env (List.hd argv) (Array.of_list argv) environment null
      fd fd
  in
  Unix.close fd;
  Unix.close null;
  let t = { pid; log } in
  let remove_log () = try Sys.remove log with Sys_error _ -> () in
  let deadline = Unix.gettimeofday () +. 20. in
  let rec wait () =
    if can_connect port then
      match check_listener t ~port with
      | Ok () -> `Ready
      | Error why -> `Failed (name ^ ": " ^ why)
    else
      match waitpid [ WNOHANG ] pid with
      | 0, _ when Unix.gettimeofday () < deadline ->
          Unix.sleepf 0.02;
          wait ()
      | 0, _ -> `Failed (name ^ ": not accepting connections after 20 s")
      | _ -> `Exited
  in
  (* Whatever goes wrong, even an interruption, the process is not left
     running: the caller never got it to stop. *)
  let abandon () =
    (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
    ignore (waitpid [] pid);
    remove_log ()
  in
  match wait () with
  | `Ready -> t
  | `Failed msg ->
      abandon ();
      failwith msg
  | `Exited ->
      let output = In_channel.with_open_bin log In_channel.input_all in
      remove_log ();
      failwith (name ^ " exited at start: " ^ output)
  | exception e ->
      abandon ();
      raise e

let stop t =
  (try Unix.kill t.pid Sys.sigterm with Unix.Unix_error _ -> ());
  ignore (waitpid [] t.pid);
  try Sys.remove t.log with Sys_error _ -> ()

(* Fields 14 and 15 of /proc/PID/stat, after the parenthesised command name
   (which may hold spaces). *)
let process_ticks pid =
  match
    In_channel.with_open_text
      (Printf.sprintf "/proc/%d/stat" pid)
      In_channel.input_all
  with
  | exception Sys_error _ -> None
  | stat -> (
      let after = String.rindex stat ')' + 2 in
      match
        String.split_on_char ' '
          (String.sub stat after (String.length stat - after))
      with
      | _state :: _ppid :: _pgrp :: _session :: _tty :: _tpgid :: _flags
        :: _minflt :: _cminflt :: _majflt :: _cmajflt :: utime :: stime :: _
        -> (
          match (int_of_string_opt utime, int_of_string_opt stime) with
          | Some u, Some s -> Some (u + s)
          | _ -> None)
      | _ -> None)

(* USER_HZ is 100 on every Linux the benchmarks run on. *)
let cpu_seconds t =
  match
    List.fold_left
      (fun acc pid ->
        match (acc, process_ticks pid) with
        | Some a, Some n -> Some (a + n)
        | _ -> None)
      (Some 0) (processes t)
  with
  | Some ticks -> float ticks /. 100.
  | None -> nan

(* VmRSS is in kB. *)
let process_rss_bytes pid =
  Option.bind
    (read_file (Printf.sprintf "/proc/%d/status" pid))
    (fun status ->
      List.find_map
        (fun line ->
          match words line with
          | [ "VmRSS:"; kb; "kB" ] ->
              Option.map (fun kb -> kb * 1024) (int_of_string_opt kb)
          | _ -> None)
        (String.split_on_char '\n' status))

let rss_bytes t =
  match
    List.fold_left
      (fun acc pid ->
        match (acc, process_rss_bytes pid) with
        | Some a, Some n -> Some (a + n)
        | _ -> None)
      (Some 0) (processes t)
  with
  | Some bytes -> float bytes
  | None -> nan

let output t = Option.value (read_file t.log) ~default:""

(* "Max open files            1024                 524288               files" *)
let descriptor_limits () =
  let limit = function
    | "unlimited" -> Some max_int
    | n -> int_of_string_opt n
  in
  match
    Option.bind (read_file "/proc/self/limits") (fun limits ->
        List.find_map
          (fun line ->
            match words line with
            | [ "Max"; "open"; "files"; soft; hard; "files" ] -> (
                match (limit soft, limit hard) with
                | Some soft, Some hard -> Some (soft, hard)
                | _ -> None)
            | _ -> None)
          (String.split_on_char '\n' limits))
  with
  | Some limits -> limits
  | None -> failwith "cannot read the descriptor limit from /proc/self/limits"

(* OCaml's Unix has no setrlimit: util-linux's prlimit sets this process's
   limit from outside. *)
let set_soft_descriptor_limit soft =
  let _, hard = descriptor_limits () in
  let cmd =
    Printf.sprintf "prlimit --pid %d --nofile=%d:%s" (Unix.getpid ()) soft
      (if hard = max_int then "unlimited" else string_of_int hard)
  in
  if Sys.command cmd <> 0 then failwith ("failed: " ^ cmd)

let with_descriptor_limit soft f =
  let before, hard = descriptor_limits () in
  if soft > hard then
    failwith
      (Printf.sprintf
         "%d descriptors are needed but the hard limit (ulimit -Hn) is %d" soft
         hard);
  if soft <= before then f ()
  else (
    set_soft_descriptor_limit soft;
    Fun.protect ~finally:(fun () -> set_soft_descriptor_limit before) f)

let self_role_argv () = [ Sys.executable_name ]

let pin_self cpus =
  let cmd =
    Printf.sprintf "taskset -a -p -c %s %d > /dev/null" cpus (Unix.getpid ())
  in
  if Sys.command cmd <> 0 then failwith ("failed: " ^ cmd)

(* Not [Domain.recommended_domain_count]: it follows this process's
   affinity, so once pinned to one core it would keep it pinned there. *)
let cpu_list_all () =
  match
    In_channel.with_open_text "/sys/devices/system/cpu/online"
      In_channel.input_line
  with
  | Some cpus when String.trim cpus <> "" -> String.trim cpus
  | Some _ | None ->
      Printf.sprintf "0-%d" (Domain.recommended_domain_count () - 1)
  | exception Sys_error _ ->
      Printf.sprintf "0-%d" (Domain.recommended_domain_count () - 1)

let load_average = Bench_harness.load_average

let get ~port path =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
      let req =
        Printf.sprintf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" path
      in
      ignore (Unix.write_substring s req 0 (String.length req));
      let b = Buffer.create 4096 and chunk = Bytes.create 4096 in
      let rec go () =
        match Unix.read s chunk 0 4096 with
        | 0 -> ()
        | n ->
            Buffer.add_subbytes b chunk 0 n;
            go ()
      in
      go ();
      let r = Buffer.contents b in
      let status = try int_of_string (String.sub r 9 3) with _ -> 0 in
      let body =
        let rec find i =
          if i + 4 > String.length r then String.length r
          else if String.sub r i 4 = "\r\n\r\n" then i + 4
          else find (i + 1)
        in
        let b = find 0 in
        String.sub r b (String.length r - b)
      in
      (status, body))

let run_quietly argv =
  let command = String.concat " " (List.map Filename.quote argv) ^ " 2>&1" in
  let ic = Unix.open_process_in command in
  let out = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 -> out
  | _ -> failwith (Printf.sprintf "%s failed:\n%s" (List.hd argv) out)

let self_signed_p256 ~cert ~key =
  ignore
    (run_quietly
       [
         "openssl";
         "req";
         "-x509";
         "-newkey";
         "ec";
         "-pkeyopt";
         "ec_paramgen_curve:prime256v1";
         "-nodes";
         "-keyout";
         key;
         "-out";
         cert;
         "-days";
         "2";
         "-subj";
         "/CN=127.0.0.1";
         "-addext";
         "subjectAltName=IP:127.0.0.1";
       ]
      : string)
