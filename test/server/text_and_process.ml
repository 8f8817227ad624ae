module Promise = Braid_sync.Promise

let find s sub =
  let n = String.length s and m = String.length sub in
  let rec go i =
    if i + m > n then None
    else if String.sub s i m = sub then Some i
    else go (i + 1)
  in
  go 0

let contains s sub = Option.is_some (find s sub)

let count s sub =
  let n = String.length s and m = String.length sub in
  let rec go i acc =
    if i + m > n then acc
    else if String.sub s i m = sub then go (i + m) (acc + 1)
    else go (i + 1) acc
  in
  go 0 0

let read_file path = In_channel.with_open_bin path In_channel.input_all
let read_if_exists path = try read_file path with Sys_error _ -> ""

let write_file path content =
  Out_channel.with_open_bin path (fun oc -> output_string oc content)

let rec waitpid pid =
  match Unix.waitpid [] pid with
  | _, status -> status
  | exception Unix.Unix_error (EINTR, _, _) -> waitpid pid

let serving ?background server f =
  let listening = Promise.create () in
  let domain =
    Domain.spawn (fun () ->
        match
          Braid_server.Server.run ?background
            ~on_listen:(fun a -> ignore (Promise.try_fill listening (Ok a)))
            server
        with
        | () -> ()
        | exception e -> ignore (Promise.try_fill listening (Error e)))
  in
  match Promise.await listening with
  | exception e ->
      Domain.join domain;
      raise e
  | address ->
      let port =
        match address with
        | Unix.ADDR_INET (_, p) -> p
        | Unix.ADDR_UNIX _ -> invalid_arg "serving: not a TCP server"
      in
      Fun.protect
        ~finally:(fun () ->
          Braid_server.Server.stop server;
          Domain.join domain)
        (fun () -> f port)

let send s data =
  let n = Unix.write_substring s data 0 (String.length data) in
  if n <> String.length data then failwith "short write"

let read_to_end s =
  let b = Buffer.create 1024 and chunk = Bytes.create 4096 in
  let rec go () =
    match Unix.read s chunk 0 4096 with
    | 0 -> ()
    | n ->
        Buffer.add_subbytes b chunk 0 n;
        go ()
    | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) ->
        failwith "the server neither answered nor closed"
    | exception Unix.Unix_error (ECONNRESET, _, _) -> ()
  in
  go ();
  Buffer.contents b

let self_signed dir =
  let cert = Filename.concat dir "cert.pem"
  and key = Filename.concat dir "key.pem" in
  let command =
    Printf.sprintf
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
       -nodes -keyout %s -out %s -days 2 -subj /CN=localhost >/dev/null 2>&1"
      (Filename.quote key) (Filename.quote cert)
  in
  if Sys.command command <> 0 then failwith ("failed: " ^ command);
  (cert, key)

(* Python closes every descriptor from 3 up (with close_range(2) where the
   kernel has it), then becomes the program. *)
let alone =
  "import os, sys\n\
   os.closerange(3, os.sysconf('SC_OPEN_MAX'))\n\
   os.execvp(sys.argv[1], sys.argv[1:])"

let spawn_alone argv ~stdin ~stdout ~stderr =
  Unix.create_process "python3"
    (Array.append [| "python3"; "-c"; alone |] argv)
    stdin stdout stderr
