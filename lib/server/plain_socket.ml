open Braid_web
open Braid_io
open Registry
open Parking

(* sendfile(2) from the file to the socket; EINVAL, ENOSYS and ESPIPE say
   that the
   kernel cannot send from that descriptor (checked before any byte moves):
   the pipeline then reads and writes. *)
let file_sender socket : Output.file_sender =
  {
    write_more = Net.write_more socket;
    send_file =
      (fun fd ~off ~len ->
        match Net.sendfile socket fd ~off ~len with
        | n -> n
        | exception
            Braid_io.Io_error
              { op = "sendfile"; error = EINVAL | ENOSYS | ESPIPE; _ } ->
            raise Output.Cannot_send_file);
  }

(* The wait of a plain connection for its next request (see
   [crowd_in_fibers]). A connection parks only when it has nothing to
   read: a fresh one, which may have its request already (the loop knows
   nothing of it yet), is looked at first. *)
let plain_wait c p (progress : Progress.t) () =
  let socket = p.socket in
  if progress.first then settle_readiness socket;
  if not (Fd.may_have_input socket) then (
    park_if_crowded c progress socket;
    wait_in_fiber c p.config progress (fun () -> Fd.await_input socket))

(* A fiber that serves plain connections in turn (its own, then woken
   ones), and the services in force in it if known: those its connections'
   handlers get when they perform service calls. *)
type worker = { fiber : Braid.Fiber.t; services : Services.t option }

(* What a fiber needs to serve [p] in a scope, and whether the client asked
   for the close it ended with ([Pipeline.closed_as_asked]). *)
type turn = {
  context : context;
  conn : plain;
  worker : worker;
  resumed : bool;
  mutable asked : bool;
}

(* [p]'s pipeline, made anew each time it gets a fiber, served until it ends
   or parks. *)
let serve_pipeline ({ context = c; conn = p; resumed; _ } as turn) =
  let progress = p.p_progress and socket = p.socket in
  let pipeline =
    Pipeline.create
      {
        server = p.config;
        dates = c.dates;
        progress;
        buffers = Some (storage c p.config);
      }
      {
        peer = Some p.peer;
        read = Sockets.counted c (Net.read_into socket);
        write = Net.write_all socket;
        await_input = Some (plain_wait c p progress);
        file_sender = Some (fun () -> file_sender socket);
        alpn = (fun () -> None);
      }
      p.services
  in
  let outcome =
    if resumed then Pipeline.resume pipeline else Pipeline.serve pipeline
  in
  turn.asked <- Pipeline.closed_as_asked pipeline;
  outcome

(* [p] served where its services are in force. A parked connection goes on
   in whichever fiber takes it: one of its listener's (the HTTPS redirect's
   have services of their own) or the unparker's. Usually the fiber has
   them already, which a comparison tells: no handler installed, no lookup.
   One closure per turn at most (the scope's is [turn]): a connection woken
   from parking takes a turn for each request. *)
let serve_turn scope ({ conn = p; worker; _ } as turn) =
  p.state <- Running scope;
  match worker.services with
  | Some services when services == p.services -> serve_pipeline turn
  | Some _ | None -> Services.run p.services (fun () -> serve_pipeline turn)

(* Serves [p] in the calling fiber until it ends or parks, then a woken
   connection if one waits ([next_ready]). *)
let rec run_plain c p ~worker ~resumed =
  if p.doomed then ended c p ~worker (Ok Pipeline.Peer_closed)
  else
    let turn = { context = c; conn = p; worker; resumed; asked = false } in
    let outcome = Sockets.run_in_scope worker.fiber serve_turn turn in
    p.state <- Between;
    match outcome with
    | Ok Parked -> park c p ~worker
    | ending -> ended c p ~worker ~asked:turn.asked ending

(* The end of [p], closed gracefully if the server ended it (lingering,
   unless its client asked for the close: [asked], Sockets.must_linger);
   then a woken connection, if one waits. A failure other than the socket's is raised
   once [p] is closed. *)
and ended c p ~worker ?(asked = false) outcome =
  (match outcome with
  | Ok (Pipeline.Peer_closed | Parked) -> finish_plain c p
  | Ok Server_closed when not (Sockets.must_linger ~asked p.socket) ->
      finish_plain c p
  | Ok Server_closed ->
      Fun.protect
        ~finally:(fun () -> finish_plain c p)
        (fun () ->
          try Sockets.lingering c p.config p.socket
          with Braid_io.Io_error _ -> ())
  | Error ((Braid_io.Io_error _ as e), _) ->
      Log.debug ("connection ended: " ^ Option.get (Braid_io.error_message e));
      finish_plain c p
  | Error (e, bt) ->
      finish_plain c p;
      Printexc.raise_with_backtrace e bt);
  next_ready c ~worker

(* Parked, [p] keeps itself, the socket's registration and the watch's
   resumer, and its fiber goes on with a woken connection, if any; else it
   goes on waiting in its fiber. *)
and park c p ~worker =
  if Parking.park_plain c p then next_ready c ~worker
  else run_plain c p ~worker ~resumed:true

(* A fiber whose connection has parked or ended serves a woken one, if any,
   before it ends, or waits for one as an idle worker. Tail calls: a fiber
   may serve any number of connections in turn. *)
and next_ready c ~worker =
  match Parking.next_plain c with
  | Some p -> run_plain c p ~worker ~resumed:true
  | None -> ()

let resume c p ~worker = run_plain c p ~worker ~resumed:true

let serve c (config : Config.t) socket peer =
  Sockets.no_delay socket;
  adjust_tick c config.timeouts;
  (* Before the connection is registered: if either fails (no services in
     force, or not in a fiber: the caller's mistake), the socket is still
     closed and its end told, as for any connection. *)
  let fiber, services =
    match
      ( Sockets.current_fiber (),
        match c.fixed_services with
        | Some services -> services
        | None -> Services.current () )
    with
    | found -> found
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        Registry.close_quietly socket;
        c.ended peer;
        Printexc.raise_with_backtrace e bt
  in
  let id = c.next_id in
  c.next_id <- id + 1;
  let p_progress = Progress.create c.draining in
  let rec p =
    {
      socket;
      peer;
      config;
      services;
      p_progress;
      id;
      wake = (fun result -> Parking.wake_parked c p result);
      state = Between;
      doomed = false;
    }
  in
  Hashtbl.replace c.live id (Plain p);
  note_peak c;
  run_plain c p ~worker:{ fiber; services = Some services } ~resumed:false
