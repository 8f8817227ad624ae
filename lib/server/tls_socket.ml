open Braid_web
open Braid_io
open Registry
open Parking
open Sockets
module Tls = Braid_tls.Connection

let count_handshake c (outcome : Metrics.handshake) =
  Option.iter (fun count -> count outcome) c.handshaken

let plain_http_on_tls =
  Framing.refusal ~status:"400 Bad Request"
    "plain HTTP request sent to the HTTPS port"

(* A TLS connection's deadlines, set at its accept as [Pipeline.serve] sets
   a new connection's (a TLS connection's pipeline is always
   [Pipeline.resume]d): the first request's head, ClientHello and handshake
   included, is due [request_header] seconds after the accept, and the
   connection counts as waiting for it (evictable, closed by a drain) while
   it is silent. *)
let start_progress (progress : Progress.t) (config : Config.t) ~now =
  Progress.start progress config.timeouts ~now;
  progress.phase <- Idle

(* A client speaking plain HTTP to the TLS port (its first byte a letter:
   a method, never a TLS record's type) is told so, as nginx does, rather
   than reset by a failed handshake; counted as a failed handshake. *)
let answer_plain_http c s =
  count_handshake c Failed;
  Log.debug "plain HTTP request on the HTTPS port: answered 400";
  (* Busy, not idle: neither evicted nor timed out while it lingers (the
     linger has its own bound). *)
  s.s_progress.phase <- Body;
  Fun.protect
    ~finally:(fun () -> finish_secure c s)
    (fun () ->
      try
        Net.write_string s.s_socket plain_http_on_tls;
        lingering c s.s_config s.s_socket
      with Braid_io.Io_error _ -> ())

(* Timed out, evicted, or closed by the client before finishing: a failed
   handshake. A client that never sent a byte began none (as a load
   balancer's TCP check, or a browser's unused preconnection). *)
let count_unfinished c s =
  match s.session with
  | Some tls -> if not (Tls.handshaken tls) then count_handshake c Failed
  | None -> (
      match peek s.s_socket with
      | `Byte _ -> count_handshake c Failed
      | `Nothing | `End_or_error -> ())

(* The wait of a TLS connection for its next request, as [plain_wait]'s:
   beyond [crowd_in_fibers] connections waiting in their fibers, one with
   nothing to read parks at once. OpenSSL reads the socket itself, so the
   loop may not know that nothing is left: a look (a peek) tells. The
   handshake's waits are its own: a connection parks in its handshake only
   when the sweeper interrupts it. *)
let secure_wait c s tls (progress : Progress.t) () =
  let socket = s.s_socket in
  (* Only a connection past its handshake (whose state lives in its fiber)
     and with no bytes held by OpenSSL (which no socket event announces)
     may wait outside its fiber. *)
  if Tls.handshaken tls && not (Tls.buffered tls) then (
    settle_readiness socket;
    park_if_crowded c progress socket);
  wait_in_fiber c s.s_config progress (fun () -> Tls.await_input tls)

(* A TLS connection in a fiber: at its accept, or woken. A silent one
   parks at once (its fiber goes on to end); its first bytes make its TLS
   state. The handshake runs at the pipeline's first wait for input, under
   the request head's deadline (counted from the accept), so the connection
   can still be closed to admit others or by a drain. Between requests it
   parks as a plain connection does: the sweeper interrupts its idle wait
   with [Unwind.Park], and the pipeline returns [Parked]. *)
let rec run_secure c s ~fiber =
  s.s_state <- Between;
  if s.s_doomed then (
    count_unfinished c s;
    finish_secure c s)
  else
    match s.session with
    | Some tls -> serve_secure c s tls ~fiber
    | None -> (
        (* Its first bytes are read, not looked at: OpenSSL takes them
           from the buffer (a ClientHello is one read). *)
        let pool = pool c s.s_config.input_buffer in
        let buf = Buffer_pool.take pool in
        match Tls.receive_first s.s_socket buf 0 (Bytes.length buf) with
        | `Nothing when not (Atomic.get c.draining) ->
            (* The accept before the ClientHello, or a spurious wake-up. *)
            Buffer_pool.give pool buf;
            park_secure c s ~fiber
        | `Ended ->
            Buffer_pool.give pool buf;
            finish_secure c s
        | `Received _ when Bytes.get buf 0 >= 'A' && Bytes.get buf 0 <= 'Z' ->
            Buffer_pool.give pool buf;
            answer_plain_http c s
        | (`Received _ | `Nothing) as first -> (
            (* A record (OpenSSL judges it), or nothing yet while the
               server drains: the unparker may have stopped, so it waits in
               its fiber, which [close_idle] ends. *)
            let received =
              match first with `Received n -> n | `Nothing -> 0
            in
            match
              Tls.server s.certificates s.s_socket ~received:(buf, 0, received)
                ~on_handshake:(fun tls ->
                  count_handshake c (if Tls.resumed tls then Resumed else Full))
            with
            | tls ->
                Buffer_pool.give pool buf;
                s.session <- Some tls;
                serve_secure c s tls ~fiber
            | exception e ->
                let bt = Printexc.get_raw_backtrace () in
                Buffer_pool.give pool buf;
                finish_secure c s;
                Printexc.raise_with_backtrace e bt))

and serve_secure c s tls ~fiber =
  let config = s.s_config and socket = s.s_socket in
  let asked = ref false in
  let outcome =
    Sockets.serve_in_scope fiber
      ~running:(fun scope -> s.s_state <- Running scope)
      (fun () ->
        let services =
          match c.tls_services with
          | Some services -> services
          | None -> Services.current ()
        in
        let pipeline =
          Pipeline.create ~secure:true
            {
              server = config;
              dates = c.dates;
              progress = s.s_progress;
              buffers = Some (storage c config);
            }
            {
              peer = Some s.s_peer;
              read = counted c (Tls.read_into tls);
              write = Tls.write_all tls;
              await_input = Some (secure_wait c s tls s.s_progress);
              file_sender = None;
              alpn = (fun () -> Tls.alpn tls);
            }
            services
        in
        let outcome = Pipeline.resume pipeline in
        asked := Pipeline.closed_as_asked pipeline;
        outcome)
  in
  s.s_state <- Between;
  match outcome with
  | Ok Parked -> park_secure c s ~fiber
  | Ok Peer_closed ->
      count_unfinished c s;
      finish_secure c s
  | Ok Server_closed ->
      count_unfinished c s;
      (* Records OpenSSL has read ahead are unread bytes too. *)
      let linger =
        Sockets.must_linger ~asked:(!asked && not (Tls.buffered tls)) socket
      in
      Fun.protect
        ~finally:(fun () -> finish_secure c s)
        (fun () ->
          (* After the close_notify: what the client still sends is
             discarded as for a plain connection. *)
          Tls.close tls;
          if linger then
            try lingering c config socket with Braid_io.Io_error _ -> ())
  | Error (e, bt) -> (
      count_unfinished c s;
      finish_secure c s;
      match e with
      | Braid_io.Io_error { error; _ } ->
          let what =
            if error = Braid_tls.eproto then "TLS connection ended: "
            else "connection ended: "
          in
          Log.debug (what ^ Option.get (Braid_io.error_message e))
      | e -> Printexc.raise_with_backtrace e bt)

(* Parked, [s] keeps this record, its TLS state (whose buffers OpenSSL
   has released: SSL_MODE_RELEASE_BUFFERS) and its socket's registration,
   and its fiber goes on with a woken TLS connection, if any, before it
   ends: the unparker would otherwise make a fiber for it, with its
   handlers, and grow its stack again (beyond 32 busy connections, each
   request would). A tail call: a fiber may serve any number in turn. *)
and park_secure c s ~fiber =
  match Parking.park_secure c s with
  | `Watching -> (
      match Parking.next_secure c with
      | Some s -> run_secure c s ~fiber
      | None -> ())
  | `Stays -> run_secure c s ~fiber
  | `Failed -> finish_secure c s

let resume c s ~fiber = run_secure c s ~fiber

let serve_tls c (config : Config.t) certificates socket peer =
  match
    no_delay socket;
    adjust_tick c config.timeouts;
    let services =
      match c.tls_services with
      | Some services -> services
      | None ->
          let services =
            match c.fixed_services with
            | Some services -> services
            | None -> Services.current ()
          in
          c.tls_services <- Some services;
          services
    in
    (current_fiber (), services.monotonic_ns ())
  with
  | exception e ->
      (* As [serve]: the socket is closed and its end told. *)
      let bt = Printexc.get_raw_backtrace () in
      close_quietly socket;
      c.ended peer;
      Printexc.raise_with_backtrace e bt
  | fiber, now ->
      let s_progress = Progress.create c.draining in
      start_progress s_progress config ~now;
      let id = c.next_id in
      c.next_id <- id + 1;
      let rec f =
        {
          s_socket = socket;
          s_peer = peer;
          s_config = config;
          certificates;
          s_progress;
          s_id = id;
          session = None;
          s_wake = (fun result -> wake_secure c f result);
          s_state = Between;
          s_doomed = false;
        }
      in
      Hashtbl.replace c.live id (Secure f);
      note_peak c;
      (* Its ClientHello may be there already: then served in this fiber. *)
      run_secure c f ~fiber
