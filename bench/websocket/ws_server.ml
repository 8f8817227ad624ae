(* The Braid side of the websocket benchmark:

     ws_server.exe PORT

   one event loop on 127.0.0.1:PORT with two WebSocket routes:
   - /echo sends every message back on its connection;
   - /broadcast posts every message to every connection of /broadcast (the
     sender's too) with examples/chat's room (Chat_room.Room), unnamed: each
     member has a bounded outbox and a writer fiber; a member whose outbox is
     full is closed with 1013 (the benchmark's client then fails the run). No
     announcements: members receive only what is posted. *)

open Braid_server
open Braid_web
module Ws = Websocket

let limits = { Ws.default_limits with idle_timeout = None }

let echo request =
  Ws.accept ~limits request (fun ws ->
      let rec loop () =
        match Ws.receive ws with
        | `Text s ->
            Ws.send_text ws s;
            loop ()
        | `Binary s ->
            Ws.send_binary ws s;
            loop ()
        | `Close _ -> ()
      in
      try loop () with Ws.Closed -> ())

let room = Chat_room.Room.create ~outbox_size:1024

let () =
  let port =
    match Sys.argv with
    | [| _; port |] -> int_of_string port
    | _ ->
        prerr_endline "usage: ws_server PORT";
        exit 2
  in
  let router =
    Router.empty
    |> Router.add GET "/echo" echo
    |> Router.add GET "/broadcast" (fun r ->
           Ws.accept ~limits r (Chat_room.Room.member room))
  in
  let config =
    {
      Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" port;
      domains = 1;
    }
  in
  match Server.create ~settings:(Real_services.settings router) config with
  | Error msg ->
      prerr_endline ("ws_server: " ^ msg);
      exit 1
  | Ok server ->
      let background () =
        ignore (Braid_io.Signal.await [ Sys.sigint; Sys.sigterm ]);
        Server.shutdown server ~deadline:1.
      in
      Server.run server ~background
