let listen_variable = "BRAID_LISTEN_FD"
let tls_listen_variable = "BRAID_LISTEN_TLS_FD"
let ready_variable = "BRAID_READY_FD"
let ready_line = "READY=1\n"

let listen ?(backlog = 4096) addr =
  let s =
    Unix.socket ~cloexec:true (Unix.domain_of_sockaddr addr) SOCK_STREAM 0
  in
  match
    (match addr with
    | ADDR_INET _ -> Unix.setsockopt s SO_REUSEADDR true
    | ADDR_UNIX _ -> ());
    Unix.bind s addr;
    Unix.listen s backlog
  with
  | () -> s
  | exception e ->
      Unix.close s;
      raise e

(* Read once, then emptied: a program this one starts later must not take
   an unrelated descriptor of the same number for the socket or the pipe. *)
let inherited_number variable =
  match Sys.getenv_opt variable with
  | None | Some "" -> Ok None
  | Some n -> (
      Unix.putenv variable "";
      match int_of_string_opt n with
      | Some n when n >= 0 -> (
          match Inherited.fd n with
          | fd ->
              Unix.set_close_on_exec fd;
              Ok (Some fd)
          | exception Unix.Unix_error (e, _, _) ->
              Error
                (Printf.sprintf "%s=%d: %s" variable n (Unix.error_message e)))
      | _ -> Error (Printf.sprintf "%s=%S: not a descriptor" variable n))

let inherited () = inherited_number listen_variable
let inherited_tls () = inherited_number tls_listen_variable

let ready () =
  match inherited_number ready_variable with
  | Ok None | Error _ -> ()
  | Ok (Some fd) ->
      (match
         Unix.write_substring fd ready_line 0 (String.length ready_line)
       with
      | _ -> ()
      | exception Unix.Unix_error (EPIPE, _, _) ->
          (* The predecessor is gone (it gave up waiting): nobody to tell. *)
          ());
      Unix.close fd

(* The successor's descriptors: its standard ones, then the listening
   socket, the ready pipe and the HTTPS socket, by number. *)
let listen_number = 3
let ready_number = 4
let tls_listen_number = 5

(* The environment for the successor: ours, with the variables set. *)
let environment ~tls =
  let ours =
    Array.to_list (Unix.environment ())
    |> List.filter (fun v ->
           not
             (List.exists
                (fun name -> String.starts_with ~prefix:(name ^ "=") v)
                [ listen_variable; tls_listen_variable; ready_variable ]))
  in
  let variable name n = Printf.sprintf "%s=%d" name n in
  Array.of_list
    (ours
    @ variable listen_variable listen_number
      :: variable ready_variable ready_number
      ::
      (if tls then [ variable tls_listen_variable tls_listen_number ] else []))

let reap pid =
  Braid_io.Blocking.run (fun () ->
      match Unix.waitpid [] pid with
      | _, status -> status
      | exception Unix.Unix_error (ECHILD, _, _) -> WEXITED 0)

let describe = function
  | Unix.WEXITED n -> Printf.sprintf "exited with %d" n
  | WSIGNALED n -> Printf.sprintf "killed by signal %d" n
  | WSTOPPED n -> Printf.sprintf "stopped by signal %d" n

let start_successor ~listening ?tls_listening ?(timeout = 30.) program argv =
  let ready_r, ready_w = Unix.pipe ~cloexec:true () in
  let env = environment ~tls:(Option.is_some tls_listening) in
  (* The child gets the sockets under fixed numbers, duplicated in it
     alone: they never become inheritable here, where another fiber may be
     starting a process of its own. *)
  let fds =
    [ Unix.stdin; Unix.stdout; Unix.stderr; listening; ready_w ]
    @ Option.to_list tls_listening
  in
  let started =
    Fun.protect
      ~finally:(fun () -> Unix.close ready_w)
      (fun () ->
        Braid_io.Process.spawn_detached ~env ~fds program
          (List.tl (Array.to_list argv)))
  in
  match started with
  | exception Braid_io.Io_error { error = e; _ } ->
      Unix.close ready_r;
      Error (Printf.sprintf "%s: %s" program (Unix.error_message e))
  | pid -> (
      Braid.Switch.run @@ fun sw ->
      Unix.set_nonblock ready_r;
      let ready = Braid_io.Fd.of_unix ~sw ready_r in
      let buf = Bytes.create 64 in
      let rec read_line got =
        if String.contains got '\n' then Some got
        else
          match Braid_io.Fd.read_into ready buf 0 (Bytes.length buf) with
          | 0 -> None
          | n -> read_line (got ^ Bytes.sub_string buf 0 n)
      in
      match Braid_io.Time.timeout timeout (fun () -> read_line "") with
      | Some (Some line) when line = ready_line -> Ok pid
      | Some (Some line) ->
          Unix.kill pid Sys.sigkill;
          ignore (reap pid : Unix.process_status);
          Error (Printf.sprintf "the new process said %S" line)
      | Some None ->
          (* It closed the pipe without a word: it is exiting, or gave up the
             pipe and would never say; either way it is not the successor. *)
          (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
          Error ("the new process " ^ describe (reap pid) ^ " before it served")
      | None ->
          (try Unix.kill pid Sys.sigkill with Unix.Unix_error _ -> ());
          ignore (reap pid : Unix.process_status);
          Error
            (Printf.sprintf "the new process was not ready within %.0f s"
               timeout))
