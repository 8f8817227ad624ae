open Braid_web
open Braid_io
module Promise = Braid_sync.Promise

type serve = Config.t -> Net.socket -> Unix.sockaddr -> unit

type shared = {
  admission : Admission.t;
  config : Config.t Atomic.t;
  metrics : Metrics.t option;
  stopped : unit Promise.t;
  drain : float Promise.t;
}

let stop t = ignore (Promise.try_fill t.stopped (Ok ()))

(* A connection's fiber logs a failure rather than failing the loop's
   connections switch (which would cancel every other connection). *)
let logging_failure f =
  match f () with
  | () -> ()
  | exception Braid.Cancelled when Fiber.is_cancelled () ->
      raise Braid.Cancelled
  | exception e -> Log.error ("connection failed: " ^ Printexc.to_string e)

(* Below the limit, a slot is taken before [accept] (so two loops cannot
   both take the last one). At the limit, the connection is accepted first
   and a slot made for it: only a client actually waiting makes the server
   close an idle connection, never the limit alone (with a client holding
   exactly [max_connections] keep-alive connections, the acceptor would
   otherwise close them one after another as they paused between requests).
   The one connection accepted past the limit is within the descriptors that
   [connections_for_descriptors] keeps spare. Running out of descriptors
   leaves the connection in the backlog too: pause (logging once per
   episode) instead of spinning on it. *)
let rec accept_loop t ~sw listener context ~serve ~paused =
  let slotted = Admission.try_acquire t.admission in
  let holds_slot = ref slotted in
  match
    let socket, peer = Net.accept_unowned listener in
    let peer = Address.unmapped peer in
    Option.iter Metrics.accepted t.metrics;
    if not (Admission.admit_client t.admission peer) then (
      match
        Fiber.fork ~sw (fun () ->
            Admission.refuse t.admission socket ~slot:slotted)
      with
      | _ -> holds_slot := false
      | exception e ->
          Connection.close_quietly socket;
          raise e)
    else
      let failed e =
        Admission.leave_client t.admission peer;
        Connection.close_quietly socket;
        raise e
      in
      (if not slotted then
         match Admission.make_room t.admission context with
         | () -> holds_slot := true
         | exception e -> failed e);
      (* [serve] owns the socket, the slot and the client's count from
         here, and gives them back when the connection ends
         ([Connection.context]'s [ended]), maybe from another fiber. *)
      match
        Fiber.fork ~sw (fun () ->
            logging_failure (fun () -> serve (Atomic.get t.config) socket peer))
      with
      | _ -> holds_slot := false
      | exception e -> failed e
  with
  | () -> accept_loop t ~sw listener context ~serve ~paused:false
  | exception
      Braid_io.Io_error
        { error = (EMFILE | ENFILE | ENOBUFS | ENOMEM) as error; _ } ->
      if !holds_slot then Admission.release t.admission;
      if not paused then
        Log.error ("accept: " ^ Unix.error_message error ^ "; pausing");
      Services.sleep 0.05;
      accept_loop t ~sw listener context ~serve ~paused:true
  | exception
      Braid_io.Io_error { error = ECONNABORTED | EPERM | EUNKNOWNERR _; _ } ->
      if !holds_slot then Admission.release t.admission;
      accept_loop t ~sw listener context ~serve ~paused
  | exception e ->
      if !holds_slot then Admission.release t.admission;
      raise e

(* The connections of one loop, on their own switch [csw]: it finishes when
   the last connection does, or is cancelled by [stop] or at the shutdown
   deadline. Watchers live on [sw] and are cancelled once [csw] is done. *)

let serve_connections t ~sw listeners context =
  let watchers = ref [] in
  let watch f = watchers := Fiber.fork ~sw f :: !watchers in
  (match
     Switch.run (fun csw ->
         watch (fun () -> Connection.sweep context);
         ignore
           (Fiber.fork ~sw:csw (fun () ->
                Connection.unpark context ~spawn:(fun f ->
                    ignore (Fiber.fork ~sw:csw (fun () -> logging_failure f)))));
         watch (fun () ->
             Promise.await t.stopped;
             Switch.cancel csw);
         let acceptors =
           List.map
             (fun (listener, serve) ->
               Fiber.fork ~sw:csw (fun () ->
                   accept_loop t ~sw:csw listener context ~serve ~paused:false))
             listeners
         in
         let deadline = Promise.await t.drain in
         (* Closing a listener under a blocked [accept] would wake it
            with EBADF: close them once the acceptors have unwound. *)
         List.iter Fiber.cancel acceptors;
         List.iter
           (fun acceptor ->
             match Fiber.join acceptor with
             | () -> ()
             | exception Braid.Cancelled when not (Fiber.is_cancelled ()) -> ())
           acceptors;
         List.iter (fun (listener, _) -> Net.close listener) listeners;
         Connection.drain context;
         watch (fun () ->
             Services.sleep (Float.min Progress.drain_grace deadline);
             Connection.close_idle context);
         watch (fun () ->
             Services.sleep deadline;
             stop t))
   with
  | () -> Connection.close_parked context
  | exception Braid.Cancelled when Promise.peek t.stopped <> None ->
      Connection.close_parked context
  | exception e ->
      (* Their slots are given back even so: the first loop waits for every
         connection before it returns. *)
      let bt = Printexc.get_raw_backtrace () in
      Connection.close_parked context;
      Printexc.raise_with_backtrace e bt);
  List.iter Fiber.cancel !watchers
