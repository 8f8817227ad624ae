open Braid_io

type mode = Effects | Direct_calls

module With_effects = Pipeline.Make (Services.Perform)
module With_direct_calls = Pipeline.Make (Production.Direct)

type context = {
  mode : mode;
  production : Production.t;
  capabilities : Capabilities.t;
  dates : Date_cache.t;
  draining : bool Atomic.t;
  live : (int, Pipeline.control * Fiber.Scope.t) Hashtbl.t;
      (* The connections in progress, for [drain]. *)
  mutable next_id : int;
}

let context ?(draining = Atomic.make false) mode production =
  {
    mode;
    production;
    capabilities = Production.capabilities production;
    dates = Date_cache.create ();
    draining;
    live = Hashtbl.create 64;
    next_id = 0;
  }

let drain c =
  Atomic.set c.draining true;
  let idle =
    Hashtbl.fold
      (fun _ (control, scope) acc ->
        if Pipeline.is_idle control then scope :: acc else acc)
      c.live []
  in
  List.iter Fiber.Scope.cancel idle

let timer = { Pipeline.timeout = Time.timeout }
let production c = c.production

(* Stop sending, then discard input until the peer closes (or the budget
   runs out), so the kernel does not answer unread data with a reset. *)
let linger socket ~seconds =
  match Net.shutdown socket Unix.SHUTDOWN_SEND with
  | exception Net.Error _ -> ()
  | () ->
      let buf = Bytes.create 4096 in
      let rec discard budget =
        if budget > 0 then
          match Net.read_into socket buf 0 4096 with
          | 0 -> ()
          | n -> discard (budget - n)
      in
      ignore
        (Time.timeout seconds (fun () ->
             try discard (1 lsl 20) with Net.Error _ -> ()))

let serve_pipeline c (config : Config.t) socket peer control =
  let read = Net.read_into socket and write = Net.write_all socket in
  match c.mode with
  | Effects ->
      With_effects.serve ~timer ~control
        (Services.Perform.env c.capabilities)
        config c.dates ~peer:(Some peer) ~read ~write
  | Direct_calls ->
      With_direct_calls.serve ~timer ~control c.production config c.dates
        ~peer:(Some peer) ~read ~write

(* Cancels the connection's scope once it is idle past its deadline. Busy,
   it checks again [min keep_alive request_header] later: no later idle
   deadline can be earlier. So a connection costs one wake-up per timeout
   period, and a request none. *)
let watchdog (t : Config.timeouts) control scope =
  let period = Float.min t.keep_alive t.request_header in
  let rec watch () =
    if Pipeline.is_idle control then
      let deadline = Pipeline.idle_deadline control in
      if Int64.to_int (Mtime_clock.now_ns ()) >= deadline then
        Fiber.Scope.cancel scope
      else (
        Time.sleep_until (Mtime.of_uint64_ns (Int64.of_int deadline));
        watch ())
    else (
      Time.sleep period;
      watch ())
  in
  watch ()

let serve c (config : Config.t) socket peer =
  (try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
   with Unix.Unix_error _ -> ());
  let control = Pipeline.control c.draining in
  let id = c.next_id in
  c.next_id <- id + 1;
  match
    Fiber.Scope.run (fun scope ->
        Hashtbl.replace c.live id (control, scope);
        match
          Switch.run (fun sw ->
              let watcher =
                Fiber.fork ~sw (fun () ->
                    watchdog config.timeouts control scope)
              in
              Fun.protect
                ~finally:(fun () ->
                  Fiber.cancel watcher;
                  Hashtbl.remove c.live id)
                (fun () -> serve_pipeline c config socket peer control))
        with
        | outcome -> outcome
        (* The watchdog or [drain] cancelled it while idle (the switch's
           wait for the watchdog too): nothing is owed. *)
        | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
            Pipeline.Peer_closed)
  with
  | Peer_closed -> ()
  | Server_closed -> linger socket ~seconds:config.linger
  | exception Net.Error { op; error } ->
      Production.log c.production
        (Message
           {
             level = Debug;
             text =
               Printf.sprintf "connection ended: %s: %s" op
                 (Unix.error_message error);
           })
