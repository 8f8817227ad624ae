module Ws = Braid_web.Websocket
module Hub = Braid_web.Hub

type t = string Hub.t

let create ~outbox_size = Hub.create ~capacity:outbox_size ()

let announce room name what =
  Option.iter (fun n -> Hub.publish room (Printf.sprintf "* %s %s" n what)) name

(* Subscribed before it is announced, so a member sees its own arrival; its
   departure is announced once it has left, to the others only. *)
let member room ?name ws =
  let post =
    match name with
    | None -> Hub.publish room
    | Some n -> fun text -> Hub.publish room (Printf.sprintf "%s: %s" n text)
  in
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
    ~finally:(fun () -> announce room name "left")
    (fun () ->
      Hub.forward room ws (fun () ->
          announce room name "joined";
          loop ()))
