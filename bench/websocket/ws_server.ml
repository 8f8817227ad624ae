(* The Braid side of the websocket benchmark:

     ws_server.exe PORT

   one event loop on 127.0.0.1:PORT with two WebSocket routes:
   - /echo sends every message back on its connection;
   - /broadcast posts every message to every connection of /broadcast (the
     sender's too), as examples/chat does: each member has a bounded outbox
     and a writer fiber; a member whose outbox is full is closed with 1013
     (the benchmark's client then fails the run). No announcements: members
     receive only what is posted. *)

open Braid_server
module Ws = Websocket
module Channel = Braid_sync.Channel
module Mutex = Braid_sync.Mutex

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

(* {1 The room} *)

type room = {
  lock : Mutex.t;  (** Held only to read or change [members]. *)
  mutable members : (int * string Channel.t) list;
  mutable next : int;
}

let room = { lock = Mutex.create (); members = []; next = 0 }
let outbox_size = 1024

let broadcast text =
  let members = Mutex.protect room.lock (fun () -> room.members) in
  List.iter
    (fun (_, outbox) ->
      match Channel.try_send outbox text with
      | true -> ()
      | false -> Channel.close outbox
      | exception Channel.Closed -> ())
    members

let writer ws outbox ~left =
  let rec loop () =
    match Channel.recv outbox with
    | text ->
        Ws.send_text ws text;
        loop ()
    | exception Channel.Closed ->
        if not (Atomic.get left) then
          Ws.close ~code:1013 ~reason:"too slow for the room" ws
  in
  try loop () with Ws.Closed -> ()

let member ws =
  let outbox = Channel.create outbox_size in
  let id =
    Mutex.protect room.lock (fun () ->
        let id = room.next in
        room.next <- id + 1;
        room.members <- (id, outbox) :: room.members;
        id)
  in
  let left = Atomic.make false in
  Braid.Switch.run (fun sw ->
      ignore (Braid.Switch.fork sw (fun () -> writer ws outbox ~left));
      let rec loop () =
        match Ws.receive ws with
        | `Text text ->
            broadcast text;
            loop ()
        | `Binary _ ->
            Ws.close ~code:1003 ~reason:"text only" ws;
            loop ()
        | `Close _ -> ()
      in
      Fun.protect
        ~finally:(fun () ->
          Atomic.set left true;
          Mutex.protect room.lock (fun () ->
              room.members <- List.remove_assoc id room.members);
          Channel.close outbox)
        loop)

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
    |> Router.add GET "/broadcast" (fun r -> Ws.accept ~limits r member)
  in
  let config =
    {
      Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" port;
      domains = 1;
    }
  in
  match Server.create ~settings:(Production.settings router) config with
  | Error msg ->
      prerr_endline ("ws_server: " ^ msg);
      exit 1
  | Ok server ->
      let background () =
        ignore (Braid_io.Signal.await [ Sys.sigint; Sys.sigterm ]);
        Server.shutdown server ~deadline:1.
      in
      Server.run server ~background
