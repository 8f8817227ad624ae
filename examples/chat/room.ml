module Ws = Braid_server.Websocket
module Channel = Braid_sync.Channel
module Mutex = Braid_sync.Mutex

type t = {
  lock : Mutex.t;  (** Held only to read or change [members], never to send. *)
  mutable members : (int * string Channel.t) list;
  mutable next : int;
  outbox_size : int;
}

let create ~outbox_size =
  { lock = Mutex.create (); members = []; next = 0; outbox_size }

(* Posts to every member without waiting: a full outbox means a member
   that cannot keep up; its channel is closed, which ends it. *)
let broadcast room text =
  let members = Mutex.protect room.lock (fun () -> room.members) in
  List.iter
    (fun (_, outbox) ->
      match Channel.try_send outbox text with
      | true -> ()
      | false -> Channel.close outbox
      | exception Channel.Closed -> ())
    members

let announce room name what =
  Option.iter (fun n -> broadcast room (Printf.sprintf "* %s %s" n what)) name

let join room name =
  let outbox = Channel.create room.outbox_size in
  let id =
    Mutex.protect room.lock (fun () ->
        let id = room.next in
        room.next <- id + 1;
        room.members <- (id, outbox) :: room.members;
        id)
  in
  announce room name "joined";
  (id, outbox)

let leave room name (id, outbox) =
  Mutex.protect room.lock (fun () ->
      room.members <- List.remove_assoc id room.members);
  Channel.close outbox;
  announce room name "left"

(* Sends the outbox until it is closed: by [leave], or by [broadcast] for
   a member that fell behind (then the client is told). *)
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

let member room ?name ws =
  let me = join room name in
  let left = Atomic.make false in
  let post =
    match name with
    | None -> broadcast room
    | Some n -> fun text -> broadcast room (Printf.sprintf "%s: %s" n text)
  in
  Braid.Switch.run (fun sw ->
      ignore (Braid.Switch.fork sw (fun () -> writer ws (snd me) ~left));
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
      Fun.protect
        ~finally:(fun () ->
          Atomic.set left true;
          leave room name me)
        loop)
