let run ~port ~root =
  let callback _conn req _body =
    let uri = Cohttp.Request.uri req in
    let fname = Cohttp.Path.resolve_local_file ~docroot:root ~uri in
    Cohttp_lwt_unix.Server.respond_file ~fname ()
  in
  Lwt_main.run
    (Cohttp_lwt_unix.Server.create
       ~mode:(`TCP (`Port port))
       (Cohttp_lwt_unix.Server.make ~callback ()))
