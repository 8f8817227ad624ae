open Braid_web
open Braid_io

type context = Registry.context

let context = Registry.context
let idle = Registry.idle
let close_idle = Registry.close_idle
let evict_idle = Registry.evict_idle
let buffers_held = Registry.buffers_held
let parked = Registry.parked
let close_quietly = Registry.close_quietly
let sweep = Sweeper.sweep
let serve = Plain_socket.serve
let serve_tls = Tls_socket.serve_tls
let close_parked = Parking.close_parked

let drain (c : context) =
  Atomic.set c.draining true;
  (* The unparker ends once no connection is parked; the idle workers at
     once. *)
  Parking.wake_unparker c;
  Parking.stop_idle_workers c;
  Registry.shut_down_upgraded c

open Registry

(* A connection served by one fiber, registered for [drain] and [sweep];
   they cancel its scope, which ends it as [Peer_closed] (idle: nothing is
   owed; stuck in a write: nothing can be delivered). Parked, it waits for
   input in its fiber again, outside its handlers, and goes on (without a
   way to wait, it reads again). *)
let serve_stream c (config : Config.t) ?(pending = fun () -> false) ?await_input
    ?interrupt ~peer ~read ~write () =
  adjust_tick c config.timeouts;
  let progress = Progress.create c.draining in
  let await_input =
    Option.map
      (fun await () -> Parking.awaiting_input c config await progress)
      await_input
  in
  let id = c.next_id in
  c.next_id <- id + 1;
  (* Parked: it waits again, outside its handlers, then goes on. *)
  let rec until_ended pipeline = function
    | Pipeline.Parked ->
        Option.iter (fun await -> await ()) await_input;
        until_ended pipeline (Pipeline.resume pipeline)
    | outcome -> outcome
  in
  Fiber.Scope.run (fun scope ->
      Hashtbl.replace c.live id
        (Fibered { progress; scope; pending; interrupt });
      note_peak c;
      match
        let services =
          match c.fixed_services with
          | Some services -> services
          | None -> Services.current ()
        in
        let pipeline =
          Pipeline.create
            {
              server = config;
              dates = c.dates;
              progress;
              buffers = Some (storage c config);
            }
            {
              peer;
              read;
              write;
              await_input;
              file_sender = None;
              alpn = (fun () -> None);
            }
            services
        in
        until_ended pipeline (Pipeline.serve pipeline)
      with
      | outcome ->
          Hashtbl.remove c.live id;
          outcome
      | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
          Hashtbl.remove c.live id;
          Pipeline.Peer_closed
      | exception e ->
          let bt = Printexc.get_raw_backtrace () in
          Hashtbl.remove c.live id;
          Printexc.raise_with_backtrace e bt)

(* The services in force in the unparker's fiber, which the fibers it
   spawns inherit: looked up once. *)
let unparker_services c =
  match c.fixed_services with
  | Some _ as services -> services
  | None -> (
      match Services.current () with
      | services -> Some services
      | exception Invalid_argument _ -> None)

let unpark c ~spawn =
  let services = unparker_services c in
  let rec unpark () =
    match Queue.take_opt c.ready with
    | Some p ->
        spawn (fun () ->
            Plain_socket.resume c p
              ~worker:{ fiber = Sockets.current_fiber (); services });
        (* One fiber at a time: the fibers already running take the woken
         connections as theirs park or end ([next_ready]), on stacks
         already grown. Another is made only while some stay queued past
         a turn of the run queue (those fibers wait, or have used their
         IO budget). *)
        Fiber.yield ();
        unpark ()
    | None when not (Queue.is_empty c.woken_tls) ->
        let f = Queue.take c.woken_tls in
        spawn (fun () ->
            Tls_socket.resume c f ~fiber:(Sockets.current_fiber ()));
        (* As for plain ones: the fibers of TLS connections that park take
         the others first ([next_secure]). *)
        Fiber.yield ();
        unpark ()
    | None when Atomic.get c.draining && c.parked_sockets = 0 -> ()
    | None ->
        Parking.await_woken c;
        unpark ()
  in
  unpark ()
