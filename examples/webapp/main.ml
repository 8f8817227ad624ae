(* The to-do application of app.ml as a program:
     main.exe --port 8080 --data DIR [--https-port 8443]
   DIR keeps the database and the attachments. With --https-port, HTTPS is
   served beside HTTP with a development certificate kept in DIR: trust the
   file it prints. Ctrl-C or SIGTERM stops it gracefully. *)

let () =
  let port = ref 8080 and https_port = ref None and data = ref "todo-data" in
  Arg.parse
    [
      ("--port", Arg.Set_int port, "PORT HTTP on 127.0.0.1 (default 8080)");
      ("--https-port", Arg.Int (fun p -> https_port := Some p), "PORT HTTPS too");
      ("--data", Arg.Set_string data, "DIR the database and attachments");
    ]
    (fun extra -> raise (Arg.Bad extra))
    "main.exe [--port N] [--https-port N] [--data DIR]";
  let files = Filename.concat !data "files" in
  List.iter
    (fun d -> if not (Sys.file_exists d) then Sys.mkdir d 0o700)
    [ !data; files ];
  let https port =
    let dir = Filename.concat !data "certificate" in
    match
      Braid_server.Config.development_tls ~dir
        (Braid_io.Net.tcp "127.0.0.1" port)
    with
    | Ok (tls, cert) ->
        Printf.printf "todo: HTTPS with %s\n%!" cert.certificate;
        tls
    | Error msg -> failwith msg
  in
  let config =
    Braid_server.Config.
      {
        default with
        listen = Braid_io.Net.tcp "127.0.0.1" !port;
        tls = Option.map https !https_port;
      }
  in
  let database = Braid_sqlite.config (Filename.concat !data "todo.db") in
  let db = Braid_sqlite.pool database in
  Result.iter_error
    (fun e -> failwith (Braid_db.Error.to_string e))
    (Braid_io.run (fun () -> Webapp.App.create_tables db));
  let app = Webapp.App.router (Webapp.App.create ~files db) in
  match Braid_server.Server.serve ~config app with
  | Ok () -> Braid_sqlite.shutdown database
  | Error msg ->
      prerr_endline msg;
      exit 1
