open Bench_harness
module Procs = Bench_server.Procs
module Peers = Bench_server.Peers
module Switch = Braid.Switch
module Fiber = Braid.Fiber
module Semaphore = Braid_sync.Semaphore

let echo_connections = 10
let broadcast_connections = 100
let window = 16
let message_size = 64

(* {1 The servers} *)

type server = { label : string; port : int; proc : Procs.t }

let ws_server_binary () =
  let dir = Filename.dirname Sys.executable_name in
  let exe = Filename.concat dir "websocket/ws_server.exe" in
  if Sys.file_exists exe then exe
  else
    failwith
      ("websocket: " ^ exe
     ^ " is missing: dune build bench/websocket/ws_server.exe")

(* The peer: websockets' asyncio server (its current implementation), one
   event loop, the same two routes; no compression offered by our client, no
   keep-alive pings. [websockets.asyncio.server.broadcast] writes to every
   connection without waiting, as the room's outboxes do. *)
let peer_script =
  {|import asyncio, sys
from websockets.asyncio.server import serve, broadcast

members = set()

async def echo(ws):
    async for message in ws:
        await ws.send(message)

async def room(ws):
    members.add(ws)
    try:
        async for message in ws:
            broadcast(members, message)
    finally:
        members.discard(ws)

async def handler(ws):
    if ws.request.path == "/echo":
        await echo(ws)
    elif ws.request.path == "/broadcast":
        await room(ws)

async def main(port):
    async with serve(handler, "127.0.0.1", port, ping_interval=None,
                     compression=None) as server:
        await server.serve_forever()

asyncio.run(main(int(sys.argv[1])))
|}

let imports_websockets python =
  Sys.command
    (Filename.quote_command python
       [ "-c"; "import websockets.asyncio.server" ]
       ~stdout:"/dev/null" ~stderr:"/dev/null")
  = 0

(* The first Python that has websockets (13 or later: its asyncio
   implementation): the system's, whose Debian package provides it, before
   whatever python3 is first on PATH. *)
let python () =
  match List.find_opt imports_websockets [ "/usr/bin/python3"; "python3" ] with
  | Some p -> p
  | None ->
      failwith
        "websocket: no python3 can import websockets.asyncio.server (apt \
         install python3-websockets, or pip install 'websockets>=13')"

let websockets_version python =
  let tmp = Filename.temp_file "braid-bench-ws" ".txt" in
  Fun.protect
    ~finally:(fun () -> Sys.remove tmp)
    (fun () ->
      ignore
        (Sys.command
           (Filename.quote_command python
              [ "-c"; "import websockets; print(websockets.__version__)" ]
              ~stdout:tmp));
      String.trim (In_channel.with_open_text tmp In_channel.input_all))

let start_braid () =
  let port = Procs.free_port () in
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"braid"
      [ ws_server_binary (); string_of_int port ]
      ~port
  in
  { label = "braid"; port; proc }

let start_peer ~python ~script =
  let port = Procs.free_port () in
  let proc =
    Procs.spawn ~cpu:Bench_server.server_cpu ~name:"websockets"
      [ python; script; string_of_int port ]
      ~port
  in
  { label = "websockets"; port; proc }

(* {1 The load} *)

let message conn seq =
  let s = Printf.sprintf "%d %d " conn seq in
  s ^ String.make (message_size - String.length s) 'x'

let cpu_self () =
  let t = Unix.times () in
  t.tms_utime +. t.tms_stime

type outcome = { messages : int; seconds : float; client_cpu : float }

(* Runs [f] in a Braid loop of this process (pinned to the client's core),
   failed if it takes [limit] seconds: a missing message would otherwise
   hang the run. *)
let with_loop ~limit f =
  Braid_io.run (fun () ->
      match Braid_io.Time.timeout limit f with
      | Some r -> r
      | None -> failwith "timed out: a message never arrived")

(* Echo: [echo_connections] clients, each sending a message and waiting for
   it back, in a loop, for [seconds]. *)
let echo ~port ~seconds =
  with_loop ~limit:(seconds +. 20.) (fun () ->
      Switch.run (fun sw ->
          let clients =
            List.init echo_connections (fun _ ->
                Ws_client.connect ~sw ~port ~path:"/echo")
          in
          let cpu0 = cpu_self () and t0 = now_s () in
          let deadline = t0 +. seconds in
          let counts = Array.make echo_connections 0 in
          Fiber.all
            (List.mapi
               (fun i c () ->
                 let rec loop seq =
                   if now_s () < deadline then (
                     let m = message i seq in
                     Ws_client.send_text c m;
                     if Ws_client.receive c <> m then
                       failwith "echo: a different message came back";
                     counts.(i) <- seq + 1;
                     loop (seq + 1))
                 in
                 loop 0)
               clients);
          let seconds = now_s () -. t0 and client_cpu = cpu_self () -. cpu0 in
          List.iter Ws_client.close clients;
          { messages = Array.fold_left ( + ) 0 counts; seconds; client_cpu }))

(* Broadcast: [broadcast_connections] clients in the room; the first also
   sends, at most [window] messages not yet received by every client. Every
   client checks it receives the messages in order. [messages] counts the
   messages sent. *)
let broadcast ~port ~seconds =
  with_loop ~limit:(seconds +. 20.) (fun () ->
      Switch.run (fun sw ->
          let n = broadcast_connections in
          let clients =
            Array.init n (fun _ ->
                Ws_client.connect ~sw ~port ~path:"/broadcast")
          in
          (* The server adds a member after its 101: let the last ones join
             (a member that misses a message fails the run anyway). *)
          Braid_io.Time.sleep 0.3;
          let free = Semaphore.make window in
          let pending = Array.make window 0 in
          let sent = ref 0 in
          let cpu0 = cpu_self () and t0 = now_s () in
          let deadline = t0 +. seconds in
          let receiver c () =
            let rec loop expected =
              match Ws_client.receive c with
              | "end" -> ()
              | m ->
                  let seq =
                    match String.split_on_char ' ' m with
                    | _ :: seq :: _ -> int_of_string_opt seq
                    | _ -> None
                  in
                  if seq <> Some expected then
                    failwith "broadcast: a message missing or out of order";
                  let slot = expected mod window in
                  pending.(slot) <- pending.(slot) - 1;
                  if pending.(slot) = 0 then Semaphore.release free;
                  loop (expected + 1)
            in
            loop 0
          in
          let sender () =
            let rec loop seq =
              if now_s () < deadline then (
                Semaphore.acquire free;
                pending.(seq mod window) <- n;
                Ws_client.send_text clients.(0) (message 0 seq);
                sent := seq + 1;
                loop (seq + 1))
            in
            loop 0;
            (* Every message delivered everywhere before the clock stops. *)
            for _ = 1 to window do
              Semaphore.acquire free
            done;
            let r =
              {
                messages = !sent;
                seconds = now_s () -. t0;
                client_cpu = cpu_self () -. cpu0;
              }
            in
            Ws_client.send_text clients.(0) "end";
            r
          in
          let result = ref None in
          Fiber.all
            ((fun () -> result := Some (sender ()))
            :: List.map receiver (Array.to_list clients));
          Array.iter Ws_client.close clients;
          Option.get !result))

(* {1 The experiment} *)

type measure = {
  rate : float;  (** Messages per second (deliveries for the broadcast). *)
  sent_rate : float;  (** Messages sent per second. *)
  cpu_us : float;  (** Server CPU per message (per delivery). *)
  client_share : float;  (** Of the client's core, busy. *)
}

let scenarios = [ "echo 1:1"; "broadcast 1:100" ]

let measure s scenario ~seconds =
  let cpu0 = Procs.cpu_seconds s.proc in
  match
    if scenario = "echo 1:1" then (echo ~port:s.port ~seconds, 1)
    else (broadcast ~port:s.port ~seconds, broadcast_connections)
  with
  | o, fanout ->
      let cpu = Procs.cpu_seconds s.proc -. cpu0 in
      let delivered = float (o.messages * fanout) in
      if o.messages = 0 then Error "no message went through"
      else
        Ok
          {
            rate = delivered /. o.seconds;
            sent_rate = float o.messages /. o.seconds;
            cpu_us = cpu /. delivered *. 1e6;
            client_share = o.client_cpu /. o.seconds;
          }
  | exception (Failure msg | Invalid_argument msg) -> Error msg
  | exception (Braid_io.Io_error _ as e) ->
      Error (Option.get (Braid_io.error_message e))

let record table key v =
  Hashtbl.replace table key
    (v :: Option.value (Hashtbl.find_opt table key) ~default:[])

let run_round tally ~round ~rounds ~seconds ~python ~script =
  List.iter
    (fun start ->
      let s = start () in
      Fun.protect
        ~finally:(fun () -> Procs.stop s.proc)
        (fun () ->
          List.iter
            (fun scenario ->
              progress "websocket: round %d/%d, %s, %s (%g s)" round rounds
                s.label scenario seconds;
              let r = measure s scenario ~seconds in
              Result.iter_error
                (fun msg ->
                  progress "websocket: failed: %s (server output: %s)" msg
                    (Procs.output s.proc))
                r;
              record tally (s.label, scenario) r)
            scenarios))
    [ start_braid; (fun () -> start_peer ~python ~script) ]

let figures tally =
  let runs label sc = Hashtbl.find tally (label, sc) in
  let get f label sc = median_or_failed f (runs label sc) in
  List.concat_map
    (fun sc ->
      let per = if sc = "echo 1:1" then "message" else "delivery" in
      List.concat_map
        (fun label ->
          let name = Printf.sprintf "%s, %s" label sc in
          let rs = runs label sc in
          [
            row name
              (if sc = "echo 1:1" then "messages per second"
               else "deliveries per second")
              (get (fun r -> r.rate) label sc)
              "msg/s";
          ]
          @ (if sc = "echo 1:1" then []
             else
               [
                 row name "messages sent per second"
                   (get (fun r -> r.sent_rate) label sc)
                   "msg/s";
               ])
          @ [
              row name ("server CPU per " ^ per)
                (get (fun r -> r.cpu_us) label sc)
                "us";
              row name "client CPU (share of its core)"
                (get (fun r -> r.client_share) label sc)
                "";
            ]
          @
          match failures rs with
          | 0 -> []
          | k ->
              [
                row name
                  (Printf.sprintf "failed runs (of %d)" (List.length rs))
                  (float k) "runs";
              ])
        [ "braid"; "websockets" ]
      @ [
          ratio
            (Printf.sprintf "braid / websockets msg/s, %s" sc)
            (get (fun r -> r.rate) "braid" sc
            /. get (fun r -> r.rate) "websockets" sc);
          ratio
            (Printf.sprintf
               "braid / websockets CPU per %s (below 1: Braid uses less), %s"
               per sc)
            (get (fun r -> r.cpu_us) "braid" sc
            /. get (fun r -> r.cpu_us) "websockets" sc);
        ])
    scenarios

let run ~quick =
  let rounds = if quick then 1 else 3 and seconds = if quick then 1. else 5. in
  let load =
    row "machine" "load average (1 min) at start" (load_average ()) ""
  in
  let python = python () in
  let version = websockets_version python in
  progress "websocket: peer is websockets %s under %s" version python;
  let dir = Peers.temp_dir "braid-bench-websocket" in
  let script = Filename.concat dir "peer.py" in
  Out_channel.with_open_text script (fun oc -> output_string oc peer_script);
  let tally = Hashtbl.create 8 in
  (* Before pinning: the CPU count follows this process's affinity. *)
  let all_cpus = Procs.cpu_list_all () in
  Fun.protect
    ~finally:(fun () ->
      Peers.remove_tree dir;
      Procs.pin_self all_cpus)
    (fun () ->
      Procs.pin_self (string_of_int Bench_server.client_cpu);
      for round = 1 to rounds do
        run_round tally ~round ~rounds ~seconds ~python ~script
      done;
      (load :: figures tally)
      @ [
          row
            (Printf.sprintf "peer: websockets %s (%s)" version python)
            "Python asyncio server, one event loop" 1. "";
          row "rounds" "fresh server processes per server" (float rounds) "";
          row "load" "seconds per run" seconds "s";
          row "load" "echo connections" (float echo_connections) "";
          row "load" "broadcast connections" (float broadcast_connections) "";
          row "load" "broadcast messages in flight at most" (float window) "";
          row "load" "message size" (float message_size) "bytes";
          row "machine" "load average (1 min) at end" (load_average ()) "";
        ])

let experiment =
  {
    name = "websocket";
    summary =
      "WebSocket 1:1 echo (10 connections) and 1:100 broadcast of 64-byte \
       messages: messages/s and server CPU per message, Braid vs Python \
       websockets (server on core 0, Braid client on core 1)";
    run;
  }
