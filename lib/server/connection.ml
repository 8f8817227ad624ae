open Braid_io

type mode = Effects | Direct_calls

module With_effects = Pipeline.Make (Services.Perform)
module With_direct_calls = Pipeline.Make (Production.Direct)

type context = {
  mode : mode;
  production : Production.t;
  capabilities : Capabilities.t;
  dates : Date_cache.t;
}

let context mode production =
  {
    mode;
    production;
    capabilities = Production.capabilities production;
    dates = Date_cache.create ();
  }

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

let serve c (config : Config.t) socket peer =
  (try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
   with Unix.Unix_error _ -> ());
  let read = Net.read_into socket and write = Net.write_all socket in
  match
    match c.mode with
    | Effects ->
        With_effects.serve
          (Services.Perform.env c.capabilities)
          config c.dates ~peer:(Some peer) ~read ~write
    | Direct_calls ->
        With_direct_calls.serve c.production config c.dates ~peer:(Some peer)
          ~read ~write
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
