type listener = { fd : Unix.file_descr; name : string }

(* systemd passes sockets from descriptor 3 on (SD_LISTEN_FDS_START). *)
let first_fd = 3

let listeners () =
  match (Sys.getenv_opt "LISTEN_PID", Sys.getenv_opt "LISTEN_FDS") with
  | None, _ | _, None -> Ok []
  | Some pid, Some _ when int_of_string_opt pid <> Some (Unix.getpid ()) ->
      Ok []
  | Some _, Some count -> (
      match int_of_string_opt count with
      | None | Some 0 -> Error (Printf.sprintf "LISTEN_FDS=%S: no socket" count)
      | Some n when n < 0 || n > 1024 ->
          Error (Printf.sprintf "LISTEN_FDS=%S: not a count of sockets" count)
      | Some n -> (
          let names =
            match Sys.getenv_opt "LISTEN_FDNAMES" with
            | Some names -> Array.of_list (String.split_on_char ':' names)
            | None -> [||]
          in
          let name i =
            if i < Array.length names && names.(i) <> "" then names.(i)
            else "unknown"
          in
          match
            List.init n (fun i ->
                let fd = Inherited.fd (first_fd + i) in
                Unix.set_close_on_exec fd;
                { fd; name = name i })
          with
          | listeners -> Ok listeners
          | exception Unix.Unix_error (e, _, _) ->
              Error
                (Printf.sprintf "LISTEN_FDS=%d: a descriptor is not open (%s)" n
                   (Unix.error_message e))))

let notify state =
  match Sys.getenv_opt "NOTIFY_SOCKET" with
  | None | Some "" -> Ok ()
  | Some socket -> (
      (* Linux writes an abstract name with a leading NUL; systemd with @. *)
      let path =
        if socket.[0] = '@' then
          "\000" ^ String.sub socket 1 (String.length socket - 1)
        else socket
      in
      match Unix.socket ~cloexec:true PF_UNIX SOCK_DGRAM 0 with
      | exception Unix.Unix_error (e, _, _) ->
          Error ("NOTIFY_SOCKET: " ^ Unix.error_message e)
      | s ->
          Fun.protect
            ~finally:(fun () -> Unix.close s)
            (fun () ->
              Unix.set_nonblock s;
              match
                Unix.sendto_substring s state 0 (String.length state) []
                  (ADDR_UNIX path)
              with
              | _ -> Ok ()
              | exception Unix.Unix_error (e, _, _) ->
                  Error
                    (Printf.sprintf "NOTIFY_SOCKET=%s: %s" socket
                       (Unix.error_message e))))
