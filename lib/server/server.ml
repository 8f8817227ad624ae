open Braid_web
open Braid_io
module Promise = Braid_sync.Promise

type t = {
  domains : int;
  io_backend : Braid_io.backend option;
  direct_calls : bool;
      (** The pipeline calls the production services directly: the benchmarks'
          baseline. *)
  settings : Real_services.settings;
  config : Config.t Atomic.t;
  address : Unix.sockaddr;
  tls_address : Unix.sockaddr option;
  tls_port : int Promise.t;  (** Filled once the TLS listener is bound. *)
  tls_context : Braid_tls.Server_context.t option Atomic.t;
      (** The certificates new TLS connections get: replaced by [set_config]. *)
  draining : bool Atomic.t;
  loops : Accept_loop.shared;
      (** What the loops share: admission, the configuration, and the promises
          [stop] and [shutdown] fill. *)
  endpoints : Endpoints.t;
  contexts : Connection.context list Atomic.t;
      (** Every loop's, for the metrics' count of idle connections. *)
}

let check_config = Config_check.check

let create_server ~direct_calls ~settings config =
  let ( let* ) = Result.bind in
  let* config = Config_check.check config in
  let* tls_context = Config_check.load_certificates config in
  Spool_budget.set_limit settings.Real_services.spool
    (Spool_limit.limit_for config);
  let settings =
    (* A metrics path needs something to count. *)
    match (config.metrics_path, settings.Real_services.metrics) with
    | Some _, None -> { settings with metrics = Some (Metrics.create ()) }
    | _ -> settings
  in
  let metrics = settings.metrics in
  let tls_address = Option.map (fun (t : Config.tls) -> t.address) config.tls in
  let address = config.listen and domains = config.domains in
  let io_backend = config.io_backend in
  let config = Atomic.make config in
  let draining = Atomic.make false in
  let admission = Admission.create ~config ~metrics in
  let contexts = Atomic.make [] in
  let endpoints =
    Endpoints.create ~config ~metrics
      {
        connections_open = (fun () -> Admission.active admission);
        connections_idle =
          (fun () ->
            List.fold_left
              (fun n c -> n + Connection.idle c)
              0 (Atomic.get contexts));
        draining;
        spool = settings.spool;
      }
  in
  Ok
    {
      domains;
      io_backend;
      direct_calls;
      settings;
      config;
      address;
      tls_address;
      tls_port = Promise.create ();
      tls_context = Atomic.make tls_context;
      draining;
      loops =
        {
          admission;
          config;
          metrics;
          stopped = Promise.create ();
          drain = Promise.create ();
        };
      endpoints;
      contexts;
    }

let create ~settings config = create_server ~direct_calls:false ~settings config
let metrics t = t.settings.metrics

let raise_descriptor_limit () =
  let soft, hard = System.descriptor_limits () in
  let wanted = min hard 1_048_576 in
  if wanted > soft then System.set_descriptor_limit wanted;
  fst (System.descriptor_limits ())

let connections_for_descriptors = Config.connections_for_descriptors
let config t = Atomic.get t.config

(* The loops run and the sockets are bound: keeping the running address and
   loop count makes [config t] tell what is in force. *)
let set_config t (c : Config.t) =
  let ( let* ) = Result.bind in
  (* Like the address: HTTPS stays as the server started, on or off, on
     its address; only its certificates and redirect follow [c]. *)
  let tls =
    match (c.tls, t.tls_address, Atomic.get t.config) with
    | Some tls, Some address, _ -> Some { tls with address }
    | None, Some _, running -> running.tls
    | _, None, _ -> None
  in
  let* c =
    Config_check.check
      {
        c with
        listen = t.address;
        domains = t.domains;
        io_backend = t.io_backend;
        tls;
      }
  in
  (* Certificates are read last: a configuration that fails its checks
     does not cost a reading of every key. *)
  let* context = Config_check.load_certificates c in
  Spool_budget.set_limit t.settings.spool (Spool_limit.limit_for c);
  Atomic.set t.tls_context context;
  Atomic.set t.config c;
  Ok ()

let with_port address port =
  match address with
  | Unix.ADDR_INET (ip, _) -> Unix.ADDR_INET (ip, port)
  | Unix.ADDR_UNIX _ -> address

let https_address t =
  match (t.tls_address, Promise.peek t.tls_port) with
  | Some address, Some (Ok port) -> Some (with_port address port)
  | _ -> None

let stop t = Accept_loop.stop t.loops

(* Each loop learns of the shutdown at once (it awaits [drain]) and counts
   the deadline from then on its services' clock. *)
let shutdown t ~deadline =
  if not (deadline >= 0. && deadline <= Config.max_seconds) then
    invalid_arg
      (Printf.sprintf
         "Braid_server.Server.shutdown: the deadline must be 0 to %.0f \
          seconds, not %g"
         Config.max_seconds deadline);
  Atomic.set t.draining true;
  ignore (Promise.try_fill t.loops.drain (Ok deadline))

let connections t = Admission.active t.loops.admission
let port_of = function Unix.ADDR_INET (_, p) -> p | Unix.ADDR_UNIX _ -> 0

(* Each domain has its own minor heap, of the runtime's size whatever the
   spawning domain set. *)
let size_minor_heap words =
  let gc = Gc.get () in
  if gc.minor_heap_size < words then Gc.set { gc with minor_heap_size = words }

(* A socket passed by the parent, already listening: each loop registers a
   copy of its own (one socket, several epolls), closed with the loop. *)
let adopt ~sw listening =
  let copy = Unix.dup ~cloexec:true listening in
  Unix.set_nonblock copy;
  Braid_io.Fd.of_unix ~sw copy

let serve_domain t ~domain ~port ~tls_port ~on_listen ~background ~listening
    ~tls_listening =
  size_minor_heap (Atomic.get t.config).minor_heap_words;
  let production = Real_services.services (Real_services.create t.settings) in
  (* The loop's handler store: the server's endpoints, then the
     application's routes. *)
  let services =
    {
      production with
      find_handler =
        Endpoints.in_front t.endpoints (Router.lookup t.settings.router);
    }
  in
  let context =
    Connection.context ~draining:t.draining
      ?fixed_services:(if t.direct_calls then Some services else None)
      ?received:(Option.map Metrics.received t.settings.metrics)
      ?handshaken:(Option.map Metrics.tls_handshake t.settings.metrics)
      ~ended:(Admission.ended t.loops.admission)
      ()
  in
  let rec register () =
    let seen = Atomic.get t.contexts in
    if not (Atomic.compare_and_set t.contexts seen (context :: seen)) then
      register ()
  in
  register ();
  (* Every fiber of this loop, [background] included, inherits them. *)
  Services.run services @@ fun () ->
  Switch.run (fun sw ->
      (* With port 0, the first loop binds and tells the others the port. *)
      let address =
        if domain = 0 then t.address
        else with_port t.address (Promise.await port)
      in
      let listener =
        match listening with
        | Some fd -> adopt ~sw fd
        | None -> Net.listen ~sw ~reuse_port:(t.domains > 1) address
      in
      let tls_listener =
        Option.map
          (fun tls_address ->
            let address =
              if domain = 0 then tls_address
              else with_port tls_address (Promise.await tls_port)
            in
            let l =
              match tls_listening with
              | Some fd -> adopt ~sw fd
              | None -> Net.listen ~sw ~reuse_port:(t.domains > 1) address
            in
            if domain = 0 then
              Promise.fill tls_port (port_of (Net.local_addr l));
            l)
          t.tls_address
      in
      let background =
        if domain = 0 then (
          let b = Fiber.fork ~sw background in
          let bound = Net.local_addr listener in
          Promise.fill port (port_of bound);
          on_listen bound;
          Some b)
        else None
      in
      (* Read per connection, from the configuration it was accepted with:
         a reload turns the redirect on or off for new connections. *)
      let serve_plain =
        let redirecting =
          Option.map
            (fun l ->
              (* The plain listener's own store while it redirects: the
                 endpoints, then the redirect for every method and path.
                 The application's middleware has nothing to wrap there; its
                 error page stays. *)
              let port = port_of (Net.local_addr l) in
              {
                production with
                find_handler =
                  Endpoints.in_front t.endpoints (Https_redirect.routes ~port);
                middleware = Fun.id;
              })
            tls_listener
        in
        fun (config : Config.t) socket peer ->
          match (config.tls, redirecting) with
          | Some { redirect = true; _ }, Some services ->
              (* The connection's fiber, and every fiber it starts, has
                 them. *)
              Services.run services (fun () ->
                  Connection.serve context config socket peer)
          | _ -> Connection.serve context config socket peer
      in
      let serve_tls config socket peer =
        match Atomic.get t.tls_context with
        | Some tls ->
            (* It owns the socket from here, as [serve] does: the context's
               [ended] gives back what the connection holds. *)
            Connection.serve_tls context config tls socket peer
        | None ->
            (* Never: HTTPS stays on while its listener exists. *)
            Connection.close_quietly socket;
            Admission.ended t.loops.admission peer
      in
      Accept_loop.serve_connections t.loops ~sw
        ((listener, serve_plain)
        :: Option.fold ~none:[] ~some:(fun l -> [ (l, serve_tls) ]) tls_listener
        )
        context;
      (* The background (a logger) outlives every loop's connections. *)
      Option.iter
        (fun b ->
          Admission.await_none t.loops.admission;
          Fiber.cancel b)
        background)

let run ?(on_listen = ignore) ?(background = ignore) ?listening ?tls_listening t
    =
  let port = Promise.create () in
  let tls_port = t.tls_port in
  ignore
    (Braid_io.run_domains ?backend:t.io_backend ~domains:t.domains
       (fun ~domain ->
         serve_domain t ~domain ~port ~tls_port ~on_listen ~background
           ~listening ~tls_listening))

module Private = struct
  let create_with_direct_calls ~settings config =
    create_server ~direct_calls:true ~settings config
end

(* {1 Signals} *)

(* A fiber that watches [signals] and hands each to [f]; [ready] is filled
   once it is subscribed, so that no signal goes unseen once [on_listen]
   has said the server serves. *)
let watching signals f ~ready () =
  Switch.run @@ fun sw ->
  let subscription = Signal.subscribe ~sw signals in
  Promise.fill ready ();
  f (fun () -> ignore (Signal.wait subscription))

let run_with_signals ?(shutdown_timeout = 10.) ?(on_terminate = ignore)
    ?on_reload ?hand_over ?logger ?(on_listen = ignore) ?background ?listening
    ?tls_listening t =
  let watchers = ref [] in
  let watch signals f =
    let ready = Promise.create () in
    watchers := (ready, watching signals f ~ready) :: !watchers
  in
  (* SIGTERM or SIGINT: a graceful shutdown; a second one: stop at once. *)
  watch [ Sys.sigterm; Sys.sigint ] (fun next ->
      next ();
      on_terminate ();
      shutdown t ~deadline:shutdown_timeout;
      next ();
      stop t);
  Option.iter
    (fun reload ->
      watch [ Sys.sighup ] (fun next ->
          while true do
            next ();
            reload ()
          done))
    on_reload;
  (* Until a successor serves: then this server drains as for SIGTERM. *)
  Option.iter
    (fun hand_over ->
      watch [ Sys.sigusr2 ] (fun next ->
          let rec wait () =
            next ();
            if hand_over () then shutdown t ~deadline:shutdown_timeout
            else wait ()
          in
          wait ()))
    hand_over;
  let watchers = List.rev !watchers in
  (* Beside the server, in its first loop, under one switch. Order at
     shutdown: the signal fiber starts the drain; the server closes its
     listeners and waits for the connections of every loop (up to the
     deadline); only then are these fibers cancelled, so the logger still
     sees the last requests and flushes when cancelled. *)
  let fibers =
    List.map snd watchers
    @ Option.to_list (Option.map (fun w () -> Log_writer.run w) logger)
    @ Option.to_list background
  in
  let background () =
    Switch.run @@ fun sw ->
    List.iter (fun f -> ignore (Fiber.fork ~sw f)) fibers
  in
  let on_listen address =
    List.iter (fun (ready, _) -> Promise.await ready) watchers;
    on_listen address
  in
  run ~on_listen ~background ?listening ?tls_listening t

(* {1 Library mode} *)

let serve ?(config = Config.default) ?(log_level = Log_event.Info)
    ?(shutdown_timeout = 10.) ?on_listen ?background router =
  let writer =
    Log_writer.create ~now:Services.now ?access:config.access_log
      ?error:config.error_log ()
  in
  (* No access log file: at Info and Debug, each request is a line of the
     error log, as a developer running the program expects. *)
  let access_log =
    match (config.access_log, log_level) with
    | None, (Info | Debug) ->
        Some (fun line -> Log_writer.error writer ~time:(Services.now ()) line)
    | _ -> None
  in
  let settings =
    Real_services.settings ~log_level ?access_log ~logger:writer router
  in
  match create ~settings config with
  | Error _ as e -> e
  | Ok server -> (
      match
        run_with_signals ~shutdown_timeout
          ~on_terminate:(fun () ->
            Log.info "shutting down (a second signal stops at once)")
          ~logger:writer ?on_listen ?background server
      with
      | () -> Ok ()
      | exception (Braid_io.Io_error _ as e) ->
          Error (Option.get (Braid_io.error_message e)))
