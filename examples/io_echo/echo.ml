(* An echo server on Braid_io, and a client to load it.

     dune exec -- examples/io_echo/echo.exe serve --port 7000 --domains 2
     dune exec -- examples/io_echo/echo.exe load --port 7000 --connections 100

   The server runs one event loop per domain, all accepting on the same port
   (SO_REUSEPORT), and stops cleanly on SIGINT or SIGTERM: the signal fiber
   fails the domain's switch, which cancels the other domains. *)

open Braid_io

exception Stop of int

let echo client =
  let buf = Bytes.create 4096 in
  let rec loop () =
    match Net.read_into client buf 0 4096 with
    | 0 -> ()
    | n ->
        Net.write_all client buf 0 n;
        loop ()
  in
  loop ()

let serve port domains =
  let addr = Net.tcp "127.0.0.1" port in
  match
    run_domains ~domains @@ fun ~domain ->
    Switch.run @@ fun sw ->
    let listener = Net.listen ~sw ~reuse_port:true addr in
    if domain = 0 then (
      Printf.printf "echo: serving 127.0.0.1:%d on %d domain(s)\n%!" port
        domains;
      ignore
        (Fiber.fork ~sw (fun () ->
             raise (Stop (Signal.await [ Sys.sigint; Sys.sigterm ])))));
    while true do
      Net.accept_fork ~sw listener ~on_error:ignore (fun client _ ->
          echo client)
    done
  with
  | _ -> ()
  | exception Stop _ -> print_endline "echo: stopped"

let read_exactly s buf n =
  let rec go off =
    if off < n then
      match Net.read_into s buf off (n - off) with
      | 0 -> failwith "the server closed the connection"
      | k -> go (off + k)
  in
  go 0

let load port connections size seconds =
  run @@ fun () ->
  let addr = Net.tcp "127.0.0.1" port in
  let count = ref 0 in
  let t0 = Time.now () in
  ignore
    (Time.timeout seconds (fun () ->
         Switch.run @@ fun sw ->
         for _ = 1 to connections do
           ignore
             (Fiber.fork ~sw (fun () ->
                  let s = Net.connect ~sw addr in
                  let buf = Bytes.make size 'x' in
                  while true do
                    Net.write_all s buf 0 size;
                    read_exactly s buf size;
                    incr count
                  done))
         done));
  let elapsed = Mtime.Span.to_float_ns (Mtime.span t0 (Time.now ())) /. 1e9 in
  Printf.printf "%d round trips in %.2f s: %.0f per second\n" !count elapsed
    (float !count /. elapsed)

let () =
  let open Cmdliner in
  let port = Arg.(value & opt int 7000 & info [ "port" ] ~doc:"TCP port.") in
  let domains =
    Arg.(value & opt int 1 & info [ "domains" ] ~doc:"Event loops (domains).")
  in
  let connections =
    Arg.(
      value & opt int 100 & info [ "connections" ] ~doc:"Client connections.")
  in
  let size = Arg.(value & opt int 64 & info [ "size" ] ~doc:"Message size.") in
  let seconds =
    Arg.(value & opt float 5. & info [ "seconds" ] ~doc:"Load duration.")
  in
  let serve_cmd =
    Cmd.v
      (Cmd.info "serve" ~doc:"run the echo server")
      Term.(const serve $ port $ domains)
  in
  let load_cmd =
    Cmd.v
      (Cmd.info "load" ~doc:"ping-pong messages with a running server")
      Term.(const load $ port $ connections $ size $ seconds)
  in
  exit
    (Cmd.eval
       (Cmd.group
          (Cmd.info "echo" ~doc:"Braid_io echo server")
          [ serve_cmd; load_cmd ]))
