module Ws = Braid_web.Websocket
module Channel = Braid_sync.Channel
module Mutex = Braid_sync.Mutex

type member = { outbox : string Channel.t; ws : Ws.t }

type t = {
  lock : Mutex.t;  (** Held only to read or change [members], never to send. *)
  mutable members : (int * member) list;
  mutable next : int;
  outbox_size : int;
}

let create ~outbox_size =
  { lock = Mutex.create (); members = []; next = 0; outbox_size }

(* Posts to every member without waiting. A full outbox means a member
   that cannot keep up: it is dropped at once, from here (any domain), with
   Websocket.abort, whose writer may be blocked on the client's full socket
   (closing its outbox alone would end it only once that write returns, at
   the send timeout). *)
let broadcast room text =
  let members = Mutex.protect room.lock (fun () -> room.members) in
  List.iter
    (fun (_, m) ->
      match Channel.try_send m.outbox text with
      | true -> ()
      | false ->
          Channel.close m.outbox;
          Ws.abort ~code:1013 ~reason:"too slow for the room" m.ws
      | exception Channel.Closed -> ())
    members

let announce room name what =
  Option.iter (fun n -> broadcast room (Printf.sprintf "* %s %s" n what)) name

let join room name ws =
  let m = { outbox = Channel.create room.outbox_size; ws } in
  let id =
    Mutex.protect room.lock (fun () ->
        let id = room.next in
        room.next <- id + 1;
        room.members <- (id, m) :: room.members;
        id)
  in
  announce room name "joined";
  (id, m)

let leave room name (id, m) =
  Mutex.protect room.lock (fun () ->
      room.members <- List.remove_assoc id room.members);
  Channel.close m.outbox;
  announce room name "left"

(* Sends the outbox until it is closed: by [leave], or by [broadcast] for
   a member that fell behind (which has aborted the connection: sending
   raises Closed, and the receiving fiber gets the close). *)
let writer ws outbox =
  let rec loop () =
    match Channel.recv outbox with
    | text ->
        Ws.send_text ws text;
        loop ()
    | exception Channel.Closed -> ()
  in
  try loop () with Ws.Closed -> ()

let member room ?name ws =
  let ((_, m) as me) = join room name ws in
  let post =
    match name with
    | None -> broadcast room
    | Some n -> fun text -> broadcast room (Printf.sprintf "%s: %s" n text)
  in
  Braid.Switch.run (fun sw ->
      ignore (Braid.Switch.fork sw (fun () -> writer ws m.outbox));
      let rec loop () =
        match Ws.receive ws with
        | `Text text ->
            post text;
            loop ()
        | `Binary _ ->
            Ws.close ~code:1003 ~reason:"text only" ws;
            loop ()
        | `Close _ -> ()
      in
      Fun.protect ~finally:(fun () -> leave room name me) loop)
