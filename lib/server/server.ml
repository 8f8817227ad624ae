open Braid_web
open Braid_io
module Promise = Braid_sync.Promise
module Mutex = Braid_sync.Mutex
module Condition = Braid_sync.Condition

(* Connection slots, server-wide: a slot is taken before [accept] (so two
   loops cannot both take the last one) and given back when the
   connection's fiber ends. *)
type slots = { mutex : Mutex.t; freed : Condition.t; active : int Atomic.t }

(* Connections per client address, over all loops. Taken and given once per
   connection, never held across a suspension: a Stdlib mutex. *)
type clients = {
  lock : Stdlib.Mutex.t;
  counts : (Unix.inet_addr, int) Hashtbl.t;
}

type t = {
  domains : int;
  direct_calls : bool;
      (** The pipeline calls the production services directly: the benchmarks'
          baseline. *)
  settings : Production.settings;
  config : Config.t Atomic.t;
  address : Unix.sockaddr;
  tls_address : Unix.sockaddr option;
  tls_port : int Promise.t;  (** Filled once the TLS listener is bound. *)
  tls_context : Braid_tls.Server_context.t option Atomic.t;
      (** The certificates new TLS connections get: replaced by [set_config]. *)
  stopped : unit Promise.t;
  draining : bool Atomic.t;
  drain : float Promise.t;
      (** Filled by [shutdown] with the seconds left to the connections. *)
  slots : slots;
  clients : clients;
  contexts : Connection.context list Atomic.t;
      (** Every loop's, for the metrics' count of idle connections. *)
}

let check_config (c : Config.t) =
  let positive name n =
    if n > 0 then Ok () else Error (Printf.sprintf "%s must be positive" name)
  in
  let ( let* ) = Result.bind in
  let* () = positive "input buffer size" c.input_buffer in
  let* () = positive "output buffer size" c.output_buffer in
  let* () = positive "maximum request line" c.limits.max_request_line in
  let* () = positive "maximum header size" c.limits.max_header_bytes in
  let* () = positive "maximum header fields" c.limits.max_header_fields in
  let* () =
    if c.limits.max_body >= 0 then Ok ()
    else Error "maximum body size must not be negative"
  in
  let* () = positive "maximum connections" c.max_connections in
  let* () = positive "minor heap words" c.minor_heap_words in
  let* () =
    match c.max_connections_per_client with
    | Cap n | Cap_except_loopback n ->
        positive "maximum connections per client" n
    | No_cap -> Ok ()
  in
  let* () =
    if c.domains >= 1 then Ok ()
    else Error "the number of domains must be at least 1"
  in
  let seconds ?(zero = false) name x =
    if Float.is_nan x || x < 0. || ((not zero) && x = 0.) then
      Error
        (Printf.sprintf "%s must be a %s number of seconds" name
           (if zero then "non-negative" else "positive"))
    else if x > Config.max_seconds then
      Error
        (Printf.sprintf "%s must be at most %.0f seconds (365 days), not %.12g"
           name Config.max_seconds x)
    else Ok ()
  in
  let* () = seconds ~zero:true "linger time" c.linger in
  let* () = seconds "request header timeout" c.timeouts.request_header in
  let* () = seconds "keep-alive timeout" c.timeouts.keep_alive in
  let* () = seconds "body timeout" c.timeouts.body in
  let* () = seconds "send timeout" c.timeouts.send in
  let* () =
    match c.timeouts.handler with
    | None -> Ok ()
    | Some x -> seconds "handler timeout" x
  in
  let* () =
    if c.index <> "" && not (String.contains c.index '/') then Ok ()
    else Error "the index file must be a plain file name"
  in
  let* () =
    if c.body_buffer >= 0 then Ok ()
    else Error "the body buffer size must not be negative"
  in
  let* () =
    match c.spool_budget with
    | Some n when n < 0 -> Error "the body spool budget must not be negative"
    | _ -> Ok ()
  in
  let* () =
    match (Unix.stat c.body_temp_dir).st_kind with
    | S_DIR -> Ok ()
    | _ ->
        Error
          (Printf.sprintf "body temporary directory %s is not a directory"
             c.body_temp_dir)
    | exception Unix.Unix_error (e, _, _) ->
        Error
          (Printf.sprintf "body temporary directory %s: %s" c.body_temp_dir
             (Unix.error_message e))
  in
  let* () =
    match c.tls with
    | Some { certificates = []; _ } ->
        Error "HTTPS needs at least one certificate and its key"
    | Some { certificates; _ } -> (
        match
          List.find_opt
            (fun (c : Braid_tls.Server_context.certificate) ->
              c.chain = "" || c.key = "")
            certificates
        with
        | Some { chain = ""; key } ->
            Error (Printf.sprintf "the TLS key %s has no certificate" key)
        | Some { chain; _ } ->
            Error (Printf.sprintf "the TLS certificate %s has no key" chain)
        | None -> Ok ())
    | None -> Ok ()
  in
  match c.root with
  | None -> Ok c
  | Some root -> (
      match Unix.realpath root with
      | exception Unix.Unix_error (e, _, _) ->
          Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))
      | real -> (
          match (Unix.stat real).st_kind with
          | S_DIR -> Ok { c with root = Some real }
          | _ -> Error (Printf.sprintf "root %s is not a directory" root)
          | exception Unix.Unix_error (e, _, _) ->
              Error (Printf.sprintf "root %s: %s" root (Unix.error_message e))))

let load_certificates (c : Config.t) =
  match c.tls with
  | None -> Ok None
  | Some tls ->
      Result.map Option.some (Braid_tls.Server_context.load tls.certificates)

let create_server ~direct_calls ~settings config =
  let ( let* ) = Result.bind in
  let* config = check_config config in
  let* tls_context = load_certificates config in
  Spool_budget.set_limit settings.Production.spool
    (Spool_limit.limit_for config);
  Ok
    {
      domains = config.domains;
      direct_calls;
      settings =
        (* A metrics path needs something to count. *)
        (match (config.metrics_path, settings.Production.metrics) with
        | Some _, None -> { settings with metrics = Some (Metrics.create ()) }
        | _ -> settings);
      config = Atomic.make config;
      address = config.listen;
      tls_address = Option.map (fun (t : Config.tls) -> t.address) config.tls;
      tls_port = Promise.create ();
      tls_context = Atomic.make tls_context;
      stopped = Promise.create ();
      draining = Atomic.make false;
      drain = Promise.create ();
      slots =
        {
          mutex = Mutex.create ();
          freed = Condition.create ();
          active = Atomic.make 0;
        };
      clients = { lock = Stdlib.Mutex.create (); counts = Hashtbl.create 64 };
      contexts = Atomic.make [];
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
    check_config { c with listen = t.address; domains = t.domains; tls }
  in
  (* Certificates are read last: a configuration that fails its checks
     does not cost a reading of every key. *)
  let* context = load_certificates c in
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

let stop t = ignore (Promise.try_fill t.stopped (Ok ()))

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
  ignore (Promise.try_fill t.drain (Ok deadline))

let connections t = Atomic.get t.slots.active

(* How long the acceptor at the limit waits for a slot before looking again
   for a connection to close: connections just accepted, or busy, become
   idle without freeing a slot. *)
let look_again = 0.05

(* How long a connection must have waited for a request before it may be
   closed to admit another: a keep-alive connection in use waits only a few
   microseconds between its requests, and a client that holds exactly
   [max_connections] of them must see no reset (nginx closes any "reusable"
   connection, and a client at the limit sees resets). A second is far
   above a client's gap between requests and far below the keep-alive and
   header timeouts, after which the sweeper closes them anyway. *)
let evictable_after = Progress.ns_of_seconds 1.

(* Takes a slot if one is free under the current limit; never waits. *)
let try_acquire_slot t =
  let active = t.slots.active in
  let limit = (Atomic.get t.config).max_connections in
  let rec take () =
    let n = Atomic.get active in
    n < limit && (Atomic.compare_and_set active n (n + 1) || take ())
  in
  take ()

(* For a connection already accepted at the limit (so someone does wait):
   waits (this fiber only) for a slot, closing the connections of this loop
   idle long enough, one per freed slot, so that a flood of idle
   connections denies no one. *)
let make_room t context =
  let s = t.slots in
  Mutex.lock s.mutex;
  match
    while not (try_acquire_slot t) do
      let now = Services.monotonic_ns () in
      if Connection.evict_idle context ~now ~idle_for:evictable_after then (
        Option.iter Metrics.refused t.settings.metrics;
        Condition.wait s.freed s.mutex)
      else
        ignore
          (Services.timeout look_again (fun () ->
               Condition.wait s.freed s.mutex))
    done
  with
  | () -> Mutex.unlock s.mutex
  | exception e ->
      Mutex.unlock s.mutex;
      raise e

(* The lock orders the decrement before a waiter's check: no lost wake-up. *)
let release_slot t =
  let s = t.slots in
  Atomic.decr s.active;
  Option.iter Metrics.closed t.settings.metrics;
  Fiber.protect (fun () ->
      Mutex.lock s.mutex;
      Condition.broadcast s.freed;
      Mutex.unlock s.mutex)

let await_no_connections t =
  let s = t.slots in
  Mutex.lock s.mutex;
  Fun.protect
    ~finally:(fun () -> Mutex.unlock s.mutex)
    (fun () ->
      while Atomic.get s.active > 0 do
        Condition.wait s.freed s.mutex
      done)

(* An address is its own key: no text made per connection. *)
let client_of = function
  | Unix.ADDR_INET (ip, _) -> Some ip
  | Unix.ADDR_UNIX _ -> None

(* Counts the connection in for its address, unless the cap is reached. *)
let admit_client t peer =
  match
    ( Config.client_cap (Atomic.get t.config).max_connections_per_client peer,
      client_of peer )
  with
  | None, _ | _, None -> true
  | Some cap, Some client ->
      Stdlib.Mutex.protect t.clients.lock (fun () ->
          let n =
            Option.value ~default:0 (Hashtbl.find_opt t.clients.counts client)
          in
          if n >= cap then false
          else (
            Hashtbl.replace t.clients.counts client (n + 1);
            true))

let leave_client t peer =
  match client_of peer with
  | None -> ()
  | Some client ->
      Stdlib.Mutex.protect t.clients.lock (fun () ->
          match Hashtbl.find_opt t.clients.counts client with
          | Some n when n > 1 -> Hashtbl.replace t.clients.counts client (n - 1)
          | Some _ -> Hashtbl.remove t.clients.counts client
          | None -> ())

let too_many_from_client =
  Framing.refusal ~status:"503 Service Unavailable"
    "too many connections from you"

(* A connection's fiber logs a failure rather than failing the loop's
   connections switch (which would cancel every other connection). *)
let logging_failure f =
  match f () with
  | () -> ()
  | exception Braid.Cancelled when Fiber.is_cancelled () ->
      raise Braid.Cancelled
  | exception e -> Log.error ("connection failed: " ^ Printexc.to_string e)

(* What an admitted connection holds, given back when it ends. *)
let connection_ended t peer =
  leave_client t peer;
  release_slot t

(* A connection over its client's cap: counted, answered 503, closed, by a
   fiber of its own. It holds a slot only if one was free when it came:
   room is never made for it (a client at its cap must not close other
   clients' connections). *)
let refuse t socket ~slot =
  Option.iter Metrics.refused t.settings.metrics;
  Fun.protect
    ~finally:(fun () ->
      Connection.close_quietly socket;
      if slot then release_slot t
      else Option.iter Metrics.closed t.settings.metrics)
    (fun () ->
      try Net.write_string socket too_many_from_client with Net.Error _ -> ())

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
  let slotted = try_acquire_slot t in
  let holds_slot = ref slotted in
  match
    let socket, peer = Net.accept_unowned listener in
    let peer = Address.unmapped peer in
    Option.iter Metrics.accepted t.settings.metrics;
    if not (admit_client t peer) then (
      match Fiber.fork ~sw (fun () -> refuse t socket ~slot:slotted) with
      | _ -> holds_slot := false
      | exception e ->
          Connection.close_quietly socket;
          raise e)
    else
      let failed e =
        leave_client t peer;
        Connection.close_quietly socket;
        raise e
      in
      (if not slotted then
         match make_room t context with
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
      Net.Error { error = (EMFILE | ENFILE | ENOBUFS | ENOMEM) as error; _ } ->
      if !holds_slot then release_slot t;
      if not paused then
        Log.error ("accept: " ^ Unix.error_message error ^ "; pausing");
      Services.sleep 0.05;
      accept_loop t ~sw listener context ~serve ~paused:true
  | exception Net.Error { error = ECONNABORTED | EPERM | EUNKNOWNERR _; _ } ->
      if !holds_slot then release_slot t;
      accept_loop t ~sw listener context ~serve ~paused
  | exception e ->
      if !holds_slot then release_slot t;
      raise e

let port_of = function Unix.ADDR_INET (_, p) -> p | Unix.ADDR_UNIX _ -> 0

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

(* The metrics and health paths, answered before the routes. The config is
   read per request, so a reload moves or removes them. The peer is already
   unmapped (the accept loop); the allow list may name either form. *)
let allowed (config : Config.t) (request : Handler.request) =
  match request.peer with
  | None -> true
  | Some peer when config.metrics_allow = [] -> Address.is_loopback peer
  | Some (ADDR_INET (ip, _)) ->
      List.exists
        (fun allowed -> Address.unmapped_inet allowed = ip)
        config.metrics_allow
  | Some (ADDR_UNIX _) -> true

let metrics_handler t metrics (request : Handler.request) =
  if not (allowed (Atomic.get t.config) request) then
    Response.error 403 "metrics: not from this address"
  else
    let fibers =
      try (Braid_io.stats ()).fibers with Invalid_argument _ -> 0
    in
    let gauges =
      [
        Metrics.gauge "connections_open" "Connections open, over all loops."
          (float (Atomic.get t.slots.active));
        Metrics.gauge "connections_idle"
          "Connections waiting for a request, as of each loop's last sweep (at \
           most a second old)."
          (float
             (List.fold_left
                (fun n c -> n + Connection.idle c)
                0 (Atomic.get t.contexts)));
        Metrics.gauge "draining" "1 once the server shuts down."
          (if Atomic.get t.draining then 1. else 0.);
        Metrics.gauge "loop_fibers"
          "Fibers of the loop that answered this scrape." (float fibers);
      ]
      @ Spool_limit.gauges t.settings.spool
      @ Metrics.process_gauges ()
    in
    Response.string ~content_type:"text/plain; version=0.0.4; charset=utf-8"
      (Metrics.render metrics gauges)

let health_handler t (_ : Handler.request) =
  if Atomic.get t.draining then Response.error 503 "draining"
  else Response.string "ok\n"

let with_endpoints t (services : Services.t) =
  let found handler =
    Router.Found { handler; params = []; tail = None; max_body = Some 0 }
  in
  let reading = function
    | Braid_http.Method.GET | Braid_http.Method.HEAD -> true
    | _ -> false
  in
  {
    services with
    find_handler =
      (fun meth path ->
        let config = Atomic.get t.config in
        match (config.metrics_path, config.health_path, t.settings.metrics) with
        | Some p, _, Some metrics when reading meth && String.equal p path ->
            found (metrics_handler t metrics)
        | _, Some p, _ when reading meth && String.equal p path ->
            found (health_handler t)
        | _ -> services.find_handler meth path);
  }

(* The host of an authority ([host[:port]]), without its port. *)
let host_of_authority authority =
  if authority <> "" && authority.[0] = '[' then
    match String.index_opt authority ']' with
    | Some i -> String.sub authority 0 (i + 1)
    | None -> authority
  else
    match String.index_opt authority ':' with
    | Some i -> String.sub authority 0 i
    | None -> authority

(* The authority of an absolute-form target ([scheme://authority/...]), if
   it has one. *)
let target_authority target =
  match String.index_opt target ':' with
  | Some i
    when i + 2 < String.length target
         && target.[i + 1] = '/'
         && target.[i + 2] = '/' ->
      let start = i + 3 in
      let rec stop j =
        if j >= String.length target then j
        else match target.[j] with '/' | '?' | '#' -> j | _ -> stop (j + 1)
      in
      Some (String.sub target start (stop start - start))
  | _ -> None

(* [308 Permanent Redirect] (the method and body kept) to the same target
   over HTTPS on [port]: the host the client named, without its port. That is
   the target's own authority for an absolute-form target (RFC 9112 §3.2.2:
   the Host field is then ignored), else [Host]. Without a host (an empty
   [Host], or none from an HTTP/1.0 client) there is nothing to redirect to:
   a guess would send the client elsewhere (RFC 9110 §4.2.2 forbids the empty
   host of an https URI), so 400. *)
let https_redirect ~port (request : Handler.request) =
  let host =
    match request.head.target_form with
    | Absolute_form -> (
        (* The parser checks only the scheme of such a target; its authority
           gets the Host field's grammar (no userinfo, RFC 9110 §4.2.4). *)
        match target_authority request.head.target with
        | Some a when Braid_http.Uri_host.is_host_field a ->
            Ok (host_of_authority a)
        | Some _ | None -> Error ())
    | Origin_form | Authority_form | Asterisk_form -> (
        (* Checked by the parser. *)
        match Handler.header request "host" with
        | Some h -> Ok (host_of_authority h)
        | None -> Ok "")
  in
  match host with
  | Error () -> Response.error 400 "bad host in the request target"
  | Ok "" -> Response.error 400 "the redirect to HTTPS needs a host name (Host)"
  | Ok host -> (
      let authority =
        if port = 443 then host else Printf.sprintf "%s:%d" host port
      in
      let target =
        match request.query with
        | None -> request.path
        | Some q -> request.path ^ "?" ^ q
      in
      match Response.redirect ~status:308 ("https://" ^ authority ^ target) with
      | response -> response
      | exception Invalid_argument _ -> Response.error 400 "bad Host")

(* What the plain listener's connections answer when it redirects: every
   route is the redirect, the metrics and health paths excepted. *)
let redirecting t (services : Services.t) ~port =
  let redirect =
    Router.Found
      {
        handler = https_redirect ~port;
        params = [];
        tail = None;
        (* The configuration's limit: a POST's body is no reason to refuse
           the redirect (308 keeps the method and body). *)
        max_body = None;
      }
  in
  with_endpoints t
    { services with find_handler = (fun _ _ -> redirect); middleware = Fun.id }

let serve_domain t ~domain ~port ~tls_port ~on_listen ~background ~listening
    ~tls_listening =
  size_minor_heap (Atomic.get t.config).minor_heap_words;
  let production = Production.services (Production.create t.settings) in
  let services = with_endpoints t production in
  let context =
    Connection.context ~draining:t.draining
      ?fixed_services:(if t.direct_calls then Some services else None)
      ?received:(Option.map Metrics.received t.settings.metrics)
      ?handshaken:(Option.map Metrics.tls_handshake t.settings.metrics)
      ~ended:(connection_ended t) ()
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
        let redirect =
          Option.map
            (fun l ->
              let redirects =
                redirecting t production ~port:(port_of (Net.local_addr l))
              in
              fun f -> Services.run redirects f)
            tls_listener
        in
        fun (config : Config.t) socket peer ->
          match (config.tls, redirect) with
          | Some { redirect = true; _ }, Some in_redirect ->
              (* The connection keeps the services it is accepted in. *)
              in_redirect (fun () ->
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
            connection_ended t peer
      in
      serve_connections t ~sw
        ((listener, serve_plain)
        :: Option.fold ~none:[] ~some:(fun l -> [ (l, serve_tls) ]) tls_listener
        )
        context;
      (* The background (a logger) outlives every loop's connections. *)
      Option.iter
        (fun b ->
          await_no_connections t;
          Fiber.cancel b)
        background)

let run ?(on_listen = ignore) ?(background = ignore) ?listening ?tls_listening t
    =
  let port = Promise.create () in
  let tls_port = t.tls_port in
  ignore
    (Braid_io.run_domains ~domains:t.domains (fun ~domain ->
         serve_domain t ~domain ~port ~tls_port ~on_listen ~background
           ~listening ~tls_listening))

module Private = struct
  let create_with_direct_calls ~settings config =
    create_server ~direct_calls:true ~settings config
end

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
    Production.settings ~log_level ?access_log ~logger:writer router
  in
  match create ~settings config with
  | Error _ as e -> e
  | Ok server -> (
      let ready = Braid_sync.Promise.create () in
      (* SIGTERM or SIGINT: a graceful shutdown; a second one: stop at once. *)
      let on_signals () =
        Braid_io.Switch.run @@ fun sw ->
        let signals =
          Braid_io.Signal.subscribe ~sw [ Sys.sigterm; Sys.sigint ]
        in
        Braid_sync.Promise.fill ready ();
        ignore (Braid_io.Signal.wait signals);
        Log.info "shutting down (a second signal stops at once)";
        shutdown server ~deadline:shutdown_timeout;
        ignore (Braid_io.Signal.wait signals);
        stop server
      in
      let fibers =
        on_signals
        :: (fun () -> Log_writer.run writer)
        :: Option.to_list background
      in
      let background () =
        Braid_io.Switch.run @@ fun sw ->
        List.iter (fun f -> ignore (Braid_io.Fiber.fork ~sw f)) fibers
      in
      let on_listen address =
        Braid_sync.Promise.await ready;
        Option.iter (fun f -> f address) on_listen
      in
      match run ~on_listen ~background server with
      | () -> Ok ()
      | exception Braid_io.Net.Error { op; error } ->
          Error (Printf.sprintf "%s: %s" op (Unix.error_message error)))
