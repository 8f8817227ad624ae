(* The application of app.ml as a program: Ctrl-C or SIGTERM stops it
   gracefully. Run from the repository's root:
     dune exec examples/webapp/main.exe -- 8080 [ROOT]
   Port 0 lets the kernel choose; the address is printed once listening. *)

let () =
  let port = try int_of_string Sys.argv.(1) with _ -> 8080 in
  let root = try Sys.argv.(2) with _ -> "examples/webapp/public" in
  Braid_pool.with_pool ~domains:2 @@ fun pool ->
  let root = Unix.realpath root in
  let config =
    {
      Braid_server.Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" port;
    }
  in
  let on_listen = function
    | Unix.ADDR_INET (_, port) -> Printf.printf "webapp: port %d\n%!" port
    | Unix.ADDR_UNIX _ -> ()
  in
  match
    Braid_server.Server.serve ~config ~on_listen (Webapp.App.router ~pool ~root)
  with
  | Ok () -> print_endline "webapp: stopped"
  | Error msg ->
      prerr_endline msg;
      exit 1
