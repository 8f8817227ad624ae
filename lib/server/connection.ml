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
      (* The connections in progress, for [drain] and [sweep]. *)
  mutable next_id : int;
  mutable tick : float;  (** How often [sweep] looks. *)
  mutable spare : (bytes * bytes) list;
      (* Buffers of finished connections: allocating 20 KiB per connection
         in the major heap would pace the major GC by the connection rate. *)
  mutable spares : int;
}

let max_spares = 64

let context ?(draining = Atomic.make false) mode production =
  {
    mode;
    production;
    capabilities = Production.capabilities production;
    dates = Date_cache.create ();
    draining;
    live = Hashtbl.create 64;
    next_id = 0;
    tick = 1.;
    spare = [];
    spares = 0;
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
let linger socket ~seconds ~buffer:buf =
  match Net.shutdown socket Unix.SHUTDOWN_SEND with
  | exception Net.Error _ -> ()
  | () ->
      let len = Bytes.length buf in
      let rec discard budget =
        if budget > 0 then
          match Net.read_into socket buf 0 len with
          | 0 -> ()
          | n -> discard (budget - n)
      in
      ignore
        (Time.timeout seconds (fun () ->
             try discard (1 lsl 20) with Net.Error _ -> ()))

let serve_pipeline c (config : Config.t) socket peer control buffers =
  let read = Net.read_into socket and write = Net.write_all socket in
  match c.mode with
  | Effects ->
      With_effects.serve ~timer ~control ~buffers
        (Services.Perform.env c.capabilities)
        config c.dates ~peer:(Some peer) ~read ~write
  | Direct_calls ->
      With_direct_calls.serve ~timer ~control ~buffers c.production config
        c.dates ~peer:(Some peer) ~read ~write

(* Marlow's timeout manager: one fiber per loop cancels the connections
   idle past their deadline or stuck in a write past theirs (a client that
   stopped reading), so a connection costs no timer and no fiber of its own.
   A deadline is met within one tick. *)
let rec sweep c =
  Time.sleep c.tick;
  let now = Int64.to_int (Mtime_clock.now_ns ()) in
  let expired =
    Hashtbl.fold
      (fun _ (control, scope) acc ->
        if
          (Pipeline.is_idle control && now >= Pipeline.idle_deadline control)
          || Pipeline.send_stalled control ~now
        then scope :: acc
        else acc)
      c.live []
  in
  List.iter Fiber.Scope.cancel expired;
  sweep c

(* The sweeper looks at least eight times per shortest timeout it enforces. *)
let adjust_tick c (t : Config.timeouts) =
  let tick = Float.min t.send (Float.min t.keep_alive t.request_header) /. 8. in
  let tick = Float.max 0.01 (Float.min 1. tick) in
  if tick < c.tick then c.tick <- tick

let take_buffers c (config : Config.t) =
  match c.spare with
  | ((i, o) as pair) :: rest
    when Bytes.length i = config.input_buffer
         && Bytes.length o = config.output_buffer ->
      c.spare <- rest;
      c.spares <- c.spares - 1;
      pair
  | _ :: _ | [] ->
      (* Spares of another size belong to a configuration since replaced. *)
      c.spare <- [];
      c.spares <- 0;
      (Bytes.create config.input_buffer, Bytes.create config.output_buffer)

let give_back c pair =
  if c.spares < max_spares then (
    c.spare <- pair :: c.spare;
    c.spares <- c.spares + 1)

let serve c (config : Config.t) socket peer =
  (try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
   with Unix.Unix_error _ -> ());
  adjust_tick c config.timeouts;
  let control = Pipeline.control c.draining in
  let id = c.next_id in
  c.next_id <- id + 1;
  let buffers = take_buffers c config in
  match
    Fiber.Scope.run (fun scope ->
        Hashtbl.replace c.live id (control, scope);
        match serve_pipeline c config socket peer control buffers with
        | outcome ->
            Hashtbl.remove c.live id;
            outcome
        (* [sweep] or [drain] cancelled it while idle (nothing is owed), or
           [sweep] in a write the client stopped reading (nothing can be
           delivered). *)
        | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
            Hashtbl.remove c.live id;
            Pipeline.Peer_closed
        | exception e ->
            Hashtbl.remove c.live id;
            raise e)
  with
  | Peer_closed -> give_back c buffers
  | Server_closed ->
      linger socket ~seconds:config.linger ~buffer:(fst buffers);
      give_back c buffers
  | exception Net.Error { op; error } ->
      give_back c buffers;
      Production.log c.production
        (Message
           {
             level = Debug;
             text =
               Printf.sprintf "connection ended: %s: %s" op
                 (Unix.error_message error);
           })
