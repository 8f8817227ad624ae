(* The application of app.ml as a program: Ctrl-C or SIGTERM stops it
   gracefully. Run from the repository's root:
     dune exec examples/webapp/main.exe -- 8080 *)

let () =
  let port = try int_of_string Sys.argv.(1) with _ -> 8080 in
  Braid_pool.with_pool ~domains:2 @@ fun pool ->
  let root = Unix.realpath "examples/webapp/public" in
  let config =
    {
      Braid_server.Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" port;
    }
  in
  match Braid_server.Server.serve ~config (Webapp.App.router ~pool ~root) with
  | Ok () -> ()
  | Error msg ->
      prerr_endline msg;
      exit 1
