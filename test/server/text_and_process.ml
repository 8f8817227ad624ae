module Promise = Braid_sync.Promise

let contains s sub =
  let n = String.length s and m = String.length sub in
  let rec go i = i + m <= n && (String.sub s i m = sub || go (i + 1)) in
  go 0

let count s sub =
  let n = String.length s and m = String.length sub in
  let rec go i acc =
    if i + m > n then acc
    else if String.sub s i m = sub then go (i + m) (acc + 1)
    else go (i + 1) acc
  in
  go 0 0

let read_file path = In_channel.with_open_bin path In_channel.input_all

let write_file path content =
  Out_channel.with_open_bin path (fun oc -> output_string oc content)

let rec waitpid pid =
  match Unix.waitpid [] pid with
  | _, status -> status
  | exception Unix.Unix_error (EINTR, _, _) -> waitpid pid

let serving server f =
  let listening = Promise.create () in
  let domain =
    Domain.spawn (fun () ->
        match
          Braid_server.Server.run
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
