(* A broadcast chat room over WebSocket.

     dune exec -- examples/chat/chat.exe --port 8080 --domains 2

   then open http://127.0.0.1:8080/ in two browser windows, or
     python3 -m websockets ws://127.0.0.1:8080/chat?name=ada

   Each member is one WebSocket connection (Chat_room.Room, room.ml): its
   fiber receives and publishes to a Braid_web.Hub; a second fiber of the
   connection (Hub.forward) sends what the hub queued for it. Members may
   live on different event loops (domains): a connection is only ever written
   by fibers of its own loop, and the hub reaches it through its bounded
   queue. A member whose queue is full (a client that stopped reading while
   others talk) is dropped at once (Websocket.abort, with close code 1013,
   "try again later", when a close frame can still go out) instead of slowing
   the room down or growing without bound. SIGINT or SIGTERM shuts the server down gracefully: every member
   gets close code 1001. *)

open Braid_server
open Braid_web
module Ws = Websocket

(* {1 The server} *)

let page =
  {|<!doctype html>
<meta charset="utf-8">
<title>Braid chat</title>
<style>body{font:16px sans-serif;max-width:40em;margin:2em auto}
#log{border:1px solid #ccc;height:20em;overflow:auto;padding:.5em;white-space:pre-wrap}</style>
<p>Name: <input id="name" value="guest"> <button id="join">join</button></p>
<div id="log"></div>
<form id="form"><input id="text" size="50" autocomplete="off"> <button>send</button></form>
<script>
let ws;
const log = (s) => { const d = document.getElementById("log");
  d.textContent += s + "\n"; d.scrollTop = d.scrollHeight; };
document.getElementById("join").onclick = () => {
  if (ws) ws.close();
  const name = encodeURIComponent(document.getElementById("name").value);
  ws = new WebSocket(`ws://${location.host}/chat?name=${name}`);
  ws.onmessage = (e) => log(e.data);
  ws.onclose = (e) => log(`* closed (${e.code}${e.reason ? ": " + e.reason : ""})`);
};
document.getElementById("form").onsubmit = (e) => {
  e.preventDefault();
  const t = document.getElementById("text");
  if (ws && t.value) ws.send(t.value);
  t.value = "";
};
</script>
|}

(* [?name=...], decoded, at most 32 bytes of valid UTF-8. *)
let name_of (r : Handler.request) =
  let from_query =
    match r.query with
    | None -> None
    | Some q ->
        List.find_map
          (fun kv ->
            match String.index_opt kv '=' with
            | Some i when String.sub kv 0 i = "name" -> (
                match
                  Braid_http.Url_path.percent_decode
                    (String.sub kv (i + 1) (String.length kv - i - 1))
                with
                | Ok n
                  when n <> ""
                       && String.length n <= 32
                       && Braid_http.Websocket_codec.Utf8.is_valid n ->
                    Some n
                | _ -> None)
            | _ -> None)
          (String.split_on_char '&' q)
  in
  Option.value from_query ~default:"guest"

let serve port domains outbox idle =
  let room = Chat_room.Room.create ~outbox_size:outbox in
  let limits =
    { Ws.default_limits with max_message = 64 * 1024; idle_timeout = idle }
  in
  let router =
    Router.empty
    |> Router.add GET "/" (fun _ -> Response.html page)
    |> Router.add GET "/chat" (fun r ->
           Ws.accept ~limits r (Chat_room.Room.member room ~name:(name_of r)))
  in
  let config =
    { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" port; domains }
  in
  match Server.create ~settings:(Real_services.settings router) config with
  | Error msg ->
      prerr_endline ("chat: " ^ msg);
      exit 1
  | Ok server ->
      let background () =
        ignore (Braid_io.Signal.await [ Sys.sigint; Sys.sigterm ]);
        print_endline "chat: shutting down";
        Server.shutdown server ~deadline:5.
      in
      Server.run server ~background ~on_listen:(fun addr ->
          match addr with
          | Unix.ADDR_INET (_, p) ->
              Printf.printf "chat: http://127.0.0.1:%d/ (%d domain(s))\n%!" p
                domains
          | Unix.ADDR_UNIX _ -> ())

let () =
  let open Cmdliner in
  let port =
    Arg.(value & opt int 8080 & info [ "port" ] ~doc:"TCP port (0: any).")
  in
  let domains =
    Arg.(value & opt int 1 & info [ "domains" ] ~doc:"Event loops (domains).")
  in
  let outbox =
    Arg.(
      value & opt int 256
      & info [ "outbox" ]
          ~doc:"Messages waiting for a member before it is dropped as too slow.")
  in
  let idle =
    Arg.(
      value
      & opt (some float) (Some 300.)
      & info [ "idle" ]
          ~doc:"Seconds without a byte from a member before it is closed.")
  in
  let cmd =
    Cmd.v
      (Cmd.info "chat" ~doc:"A broadcast chat room over WebSocket.")
      Term.(const serve $ port $ domains $ outbox $ idle)
  in
  exit (Cmd.eval cmd)
