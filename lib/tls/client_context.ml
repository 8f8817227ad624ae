type t = { context : Ssl.context; verifies : bool; alpn : string list }

external configure_client : Ssl.context -> unit = "braid_tls_configure_client"

let create ?(verify = true) ?ca_file ?(alpn = []) () =
  Ssl.init ();
  let context = Ssl.create_context Version.flexible Client_context in
  Ssl.set_min_protocol_version context TLSv1_2;
  Ssl.set_max_protocol_version context TLSv1_3;
  configure_client context;
  let trusted =
    if not verify then Ok ()
    else
      match ca_file with
      | None ->
          if Ssl.set_default_verify_paths context then Ok ()
          else Error "the system's trusted certificates could not be loaded"
      | Some file -> (
          match Ssl.load_verify_locations context file "" with
          | () -> Ok ()
          | exception Invalid_argument _ ->
              Error (file ^ ": not a readable PEM file of certificates"))
  in
  Result.map
    (fun () ->
      if verify then Ssl.set_verify context [ Verify_peer ] None;
      { context; verifies = verify; alpn })
    trusted

let context t = t.context
let verifies t = t.verifies
let alpn t = t.alpn
