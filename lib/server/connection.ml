open Braid_web
open Braid_web.Private
open Braid_io

type context = {
  fixed_services : Services.t option;
  dates : Head_cache.t;
  draining : bool Atomic.t;
  live : (int, live) Hashtbl.t;
      (* The connections in progress, for [drain] and [sweep]. *)
  mutable next_id : int;
  mutable tick : float;  (** How often [sweep] looks. *)
  mutable pools : Buffer_pool.t list;
      (* Buffers by size (those of the configurations seen): a connection
         holds one only while it reads or writes a request. Allocating them
         per connection in the major heap would pace the major GC by the
         connection rate. *)
  mutable peak : int;
      (** Most connections in progress since [sweep] last compacted the heap. *)
  mutable compacted_at : int;
      (** Connections in progress when [sweep] last compacted the heap. *)
  idle : int Atomic.t;
      (** Connections waiting for a request at [sweep]'s last look: read by the
          metrics, from any domain. *)
  received : (int -> unit) option;  (** Counts the bytes read, if asked. *)
  handshaken : (Metrics.handshake -> unit) option;
      (** Counts the TLS handshakes, if asked. *)
  ended : Unix.sockaddr -> unit;
      (** Told when a socket connection (plain or TLS) ends, whichever fiber
          ends it. *)
  ready : plain Queue.t;
      (** Parked connections woken (by input, or to be closed), for the unparker
          to give a fiber each. *)
  mutable unparker : unit Braid.resumer option;
      (** The unparker, while it waits for [ready]. *)
  mutable idle_workers : plain Braid.resumer list;
      (** Fibers that served a connection and wait for a woken one, their stacks
          grown: at most [idle_workers_kept]. *)
  mutable parked_sockets : int;
      (** Socket connections (plain or TLS) waiting with no fiber. *)
  woken_tls : secure Queue.t;
      (** Parked TLS connections woken (by input, or to be closed), for the
          unparker to give a fiber each. *)
  mutable waiting_in_fiber : int;
      (** Plain and TLS connections waiting for a request inside their fiber. *)
  mutable tls_services : Services.t option;
      (** The services its TLS connections run under (those of the loop), looked
          up at the first: the pipeline would otherwise make that lookup, an
          effect, each time a parked one is woken. *)
  mutable last_storage : (Config.t * Pipeline.buffers) option;
      (** The buffers' storage for the configuration last asked for: a plain
          connection asks each time it leaves parking. *)
}

(* What [drain] and [sweep] need of a connection in progress. *)
and live = Fibered of fibered | Plain of plain | Secure of secure

(* A connection served by one fiber from start to end (over a stream of the
   caller's: [serve_stream]). *)
and fibered = {
  control : Control.t;
  scope : Fiber.Scope.t;  (** Cancelling it ends the connection. *)
  interrupt : (exn -> unit) option;
      (** Wakes the connection's blocked read with an exception. *)
  pending : unit -> bool;
      (** Whether bytes are waiting to be read: a request that arrived while the
          loop could not run (the process was stopped, or starved) and that the
          connection's fiber has not been woken for yet. *)
}

(* A plain socket connection: between requests it may wait with no fiber
   (parked), as a few hundred bytes the loop's epoll points to; input gives
   it a fresh fiber. What it keeps while parked is all here: the pipeline's
   state is rebuilt when it goes on. *)
and plain = {
  socket : Net.socket;
  peer : Unix.sockaddr;
  config : Config.t;  (** The configuration it was accepted with. *)
  services : Services.t;
      (** The services answering it, looked up once when it was accepted (in the
          accepting fiber: those of its listener): a lookup is an effect, and
          the pipeline would otherwise make one each time the connection leaves
          parking. *)
  p_control : Control.t;
  id : int;
  wake : unit Braid.resumer;
      (** Its watch's resumer ([wake_parked]), made once: a closure made at each
          park would outlive the minor heap of a busy server. *)
  mutable state : state;
  mutable doomed : bool;  (** To be closed, not served, when it next runs. *)
}

(* A TLS connection. Until its first bytes, and between requests once
   parked (as a plain one parks), it waits with no fiber; until its first
   bytes, with no TLS state either: a silent client costs what a parked
   plain connection does. Its own record, not [plain]'s: a parked plain
   connection's size is a headline, and a TLS one needs more. *)
and secure = {
  s_socket : Net.socket;
  s_peer : Unix.sockaddr;
  s_config : Config.t;
  certificates : Braid_tls.Server_context.t;
  s_control : Control.t;
      (** Its deadlines from its accept (see [start_control]). *)
  s_id : int;
  mutable session : Braid_tls.Connection.t option;
      (** Made when its first bytes come: [None] while silent. *)
  s_wake : unit Braid.resumer;
      (** Its watch's resumer ([wake_secure]), made once, as [plain]'s. *)
  mutable s_state : state;
  mutable s_doomed : bool;  (** To be closed, not served, when it runs. *)
}

and state =
  | Running of Fiber.Scope.t  (** In a fiber: cancelling the scope ends it. *)
  | Between  (** In a fiber, outside its scope (starting, or finishing). *)
  | Watching
      (** Parked: waiting for input with no fiber, its socket watched. *)
  | Woken  (** In [ready], or given a fiber that has not started. *)
  | Ended

let control_of = function
  | Fibered f -> f.control
  | Plain p -> p.p_control
  | Secure s -> s.s_control

let max_spares = 64

(* Connections at once that make a burst worth compacting after. *)
let burst = 512

(* Connections holding buffers while idle beyond which they give them back
   at once. *)
let crowd = 256
let idle c = Atomic.get c.idle

let context ?(draining = Atomic.make false) ?fixed_services ?received
    ?handshaken ?(ended = ignore) () =
  {
    ended;
    ready = Queue.create ();
    unparker = None;
    idle_workers = [];
    parked_sockets = 0;
    woken_tls = Queue.create ();
    waiting_in_fiber = 0;
    tls_services = None;
    last_storage = None;
    idle = Atomic.make 0;
    received;
    handshaken;
    fixed_services;
    dates = Head_cache.create ();
    draining;
    live = Hashtbl.create 64;
    next_id = 0;
    tick = 1.;
    pools = [];
    peak = 0;
    compacted_at = 0;
  }

(* Ends a socket connection (plain or TLS) in [state], marking it [doom]ed:
   its fiber is cancelled, or, parked, its watch is woken with the error
   (see [wake_parked]) and it is closed by a fiber the unparker gives it
   (never here: the caller may hold a lock that closing takes, as the
   acceptor at the limit does). Doomed in every state: a fiber that parks
   without suspending again never sees its cancellation, and parking looks
   at the mark. *)
let end_socket_connection state socket ~doom =
  match state with
  | Running scope ->
      doom ();
      Fiber.Scope.cancel scope
  | Watching -> (
      doom ();
      try Fd.interrupt socket Braid.Cancelled with Fd.Error _ -> ())
  | Between | Woken -> doom ()
  | Ended -> ()

let end_live = function
  | Fibered f -> Fiber.Scope.cancel f.scope
  | Plain p ->
      end_socket_connection p.state p.socket ~doom:(fun () -> p.doomed <- true)
  | Secure s ->
      end_socket_connection s.s_state s.s_socket ~doom:(fun () ->
          s.s_doomed <- true)

let socket_connection_ending state ~doomed =
  match state with
  | Running scope -> doomed || Fiber.Scope.is_cancelled scope
  | Watching | Between | Woken -> doomed
  | Ended -> true

let is_ending = function
  | Fibered f -> Fiber.Scope.is_cancelled f.scope
  | Plain p -> socket_connection_ending p.state ~doomed:p.doomed
  | Secure s -> socket_connection_ending s.s_state ~doomed:s.s_doomed

(* What a read of the socket would find now: its first byte, nothing yet,
   or its end (or an error). A peek, never blocking. *)
let peek socket : [ `Byte of char | `Nothing | `End_or_error ] =
  let b = Bytes.create 1 in
  match Unix.recv (Fd.to_unix socket) b 0 1 [ MSG_PEEK ] with
  | 0 -> `End_or_error
  | _ -> `Byte (Bytes.get b 0)
  | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK | EINTR), _, _) -> `Nothing
  | exception Unix.Unix_error _ -> `End_or_error

(* Bytes in the socket's receive queue. End of stream or an error count as
   nothing to read: closing then loses nothing. *)
let input_waiting socket () =
  match peek socket with `Byte _ -> true | `Nothing | `End_or_error -> false

let pending = function
  | Fibered f -> f.pending ()
  | Plain p -> input_waiting p.socket ()
  | Secure { session = Some tls; s_socket; _ } ->
      (* Decrypted bytes, not part of a record: a client that sends part of
         one and stops has sent nothing readable. *)
      Braid_tls.Connection.pending tls || input_waiting s_socket ()
  | Secure { session = None; s_socket; _ } -> input_waiting s_socket ()

let wake_unparker c =
  match c.unparker with
  | Some resume ->
      c.unparker <- None;
      ignore (resume (Ok ()))
  | None -> ()

(* A fiber waiting for a woken connection takes [p], if there is one. *)
let rec give_to_idle_worker c p =
  match c.idle_workers with
  | [] -> false
  | resume :: others ->
      c.idle_workers <- others;
      (* [false]: that fiber was cancelled meanwhile. *)
      resume (Ok p) || give_to_idle_worker c p

(* Told to an idle worker when the server drains: it ends. *)
exception No_more_work

let stop_idle_workers c =
  let idle = c.idle_workers in
  c.idle_workers <- [];
  List.iter (fun resume -> ignore (resume (Error No_more_work))) idle

(* Parked, and woken by its request, which it is about to read. *)
let woken_by_request = function
  | Plain { state = Woken; doomed = false; _ }
  | Secure { s_state = Woken; s_doomed = false; _ } ->
      true
  | Plain _ | Secure _ | Fibered _ -> false

(* A connection waiting for a request when the drain begins is not closed
   at once: its client may have sent the request already (a connection
   accepted just before listening stopped, or a keep-alive one reused at
   that instant), and closing it would fail that request, which HTTP
   clients do not all retry. It may read one more request, answered with
   [Connection: close]; [close_idle] ends the wait. *)
let close_idle c =
  let idle =
    Hashtbl.fold
      (fun _ l idle ->
        if woken_by_request l then idle
        else if
          (* One whose request has come (its fiber not yet run) reads it. *)
          Control.is_idle (control_of l) && not (pending l)
        then l :: idle
        else idle)
      c.live []
  in
  List.iter end_live idle

let drain c =
  Atomic.set c.draining true;
  (* The unparker ends once no connection is parked; the idle workers at
     once. *)
  wake_unparker c;
  stop_idle_workers c;
  let upgraded =
    Hashtbl.fold
      (fun _ l upgraded ->
        if (control_of l).phase = Upgraded then l :: upgraded else upgraded)
      c.live []
  in
  (* An upgraded connection is told, so that its protocol can say goodbye:
     a blocked read raises [Upgraded.Shutdown], and so does every read
     that would block from now on. Without a way to wake it, it is
     cancelled. *)
  List.iter
    (fun l ->
      match l with
      | Fibered { interrupt = Some interrupt; _ } -> (
          try interrupt Upgraded.Shutdown with _ -> ())
      | Fibered { interrupt = None; _ } -> end_live l
      | Plain p -> ( try Fd.interrupt p.socket Upgraded.Shutdown with _ -> ())
      | Secure s -> (
          try Fd.interrupt s.s_socket Upgraded.Shutdown with _ -> ()))
    upgraded

(* At the connection limit, nginx's rule, with guards:
   - a connection idle for less than [idle_for] is never closed (a
     keep-alive connection a client is using waits a few microseconds
     between its requests, and closing it there is a reset the client sees);
   - nor one whose request has come: woken by it, or with bytes waiting
     (the sweeper spares those too);
   - while any connection that has never sent a request waits (a silent
     client, or one stalled in its TLS handshake), no keep-alive connection
     that has is closed: such a one goes once it has waited [idle_for], and
     a client that made requests is not disturbed by those that make none;
   - among those left, the one that has waited longest.
   Nothing is owed to the one closed. *)
let evictable l =
  (not (woken_by_request l))
  && Control.is_idle (control_of l)
  && not (is_ending l)

let evict_idle c ~now ~idle_for =
  let rec choose spared =
    let fresh_waiting = ref false
    and oldest_fresh = ref None
    and oldest_kept = ref None in
    Hashtbl.iter
      (fun id l ->
        if evictable l && not (List.mem id spared) then (
          let control = control_of l in
          if control.first then fresh_waiting := true;
          if now - control.idle_since >= idle_for then
            let oldest = if control.first then oldest_fresh else oldest_kept in
            match !oldest with
            | Some (_, o) when (control_of o).idle_since <= control.idle_since
              ->
                ()
            | _ -> oldest := Some (id, l)))
      c.live;
    match if !fresh_waiting then !oldest_fresh else !oldest_kept with
    | None -> false
    | Some (id, l) when pending l -> choose (id :: spared)
    | Some (_, l) ->
        end_live l;
        true
  in
  choose []

let buffers_held c = List.fold_left (fun n p -> n + Buffer_pool.out p) 0 c.pools

(* Counted as connections arrive: a burst may come and go between two of
   the sweeper's looks. *)
let note_peak c =
  let live = Hashtbl.length c.live in
  if live > c.peak then c.peak <- live

(* The sweeper's count of its looks at one idle wait: the second or later. *)
let seen_twice (control : Control.t) =
  control.idle_rounds <- control.idle_rounds + 1;
  control.idle_rounds >= 2

(* Marlow's timeout manager: one fiber per loop cancels the connections
   idle past their deadline or stuck in a write past theirs (a client that
   stopped reading), so a connection costs no timer and no fiber of its own.
   A deadline is met within one tick. An idle connection with a request
   waiting is left alone: after a pause of the whole process (SIGSTOP, a VM
   pause, starvation) the sweeper's timer and the client's bytes are both
   due, and the sweeper may run first; the request arrived in time. *)
let rec sweep c =
  let services = Services.current () in
  services.sleep c.tick;
  let now = services.monotonic_ns () in
  let idle = ref 0 in
  let draining = Atomic.get c.draining in
  let expired =
    Hashtbl.fold
      (fun _ l acc ->
        let control = control_of l in
        if not draining then release_if_waiting l;
        if Control.is_idle control then incr idle;
        if
          Control.is_idle control
          && now >= Control.idle_deadline control
          && not (pending l)
          || Control.send_stalled control ~now
        then l :: acc
        else acc)
      c.live []
  in
  List.iter end_live expired;
  Atomic.set c.idle !idle;
  give_back_memory c ~idle:!idle;
  sweep c

(* After a burst the heap keeps the memory it used: OCaml returns it to the
   system only when it compacts. A compaction pauses the loop's domain (and
   the others), so it is done in a lull, and once per burst:
   - when the connections have fallen to an eighth of their peak (a burst
     of connections, now mostly gone);
   - when every connection waits for a request, none holds a buffer (the
     sweeper has taken them back), and there are twice as many as at the
     last compaction (a burst of connections, now idle: what their requests
     left in the heap is garbage, and a parked connection takes a few
     hundred bytes). *)
and give_back_memory c ~idle =
  let live = Hashtbl.length c.live in
  let compact () =
    List.iter Buffer_pool.trim c.pools;
    System.give_back_memory ();
    c.compacted_at <- live
  in
  if c.peak >= burst && live <= c.peak / 8 then (
    c.peak <- live;
    compact ())
  else if
    live >= burst && idle = live
    && live >= 2 * c.compacted_at
    && buffers_held c = 0
  then compact ()

(* A connection seen waiting for its next request at two looks in a row
   or more (idle a tick at least) gives its buffers back to the pool and is parked
   (it waits outside its handlers, whose stacks are freed): an idle
   connection holds neither, and one between requests under load keeps
   them (taking and giving at every request would cost write barriers, and
   entering the handlers again would grow their stacks again). One that
   waits in its idle read (woken by a readiness event whose bytes an
   earlier read had taken) is parked the same way; its read holds the input
   buffer, so the pipeline gives its buffers back once the read is
   interrupted, not the sweeper before. *)
and release_if_waiting l =
  let control = control_of l in
  match control.idle_wait with
  | Awaiting ->
      if seen_twice control then (
        control.release ();
        park_waiting l)
  | Reading -> if seen_twice control then park_waiting l
  | Not_waiting -> control.idle_rounds <- 0

(* Its wait or idle read (so it runs) raises [Park]: the connection
   waits again outside its handlers. One whose wait cannot be interrupted
   keeps waiting where it is. *)
and park_waiting = function
  | Fibered { interrupt = Some interrupt; control; _ } ->
      if not control.parked then interrupt Unwind.Park
  | Fibered { interrupt = None; _ } -> ()
  | Plain p -> (
      if not p.p_control.parked then
        try Fd.interrupt p.socket Unwind.Park with Fd.Error _ -> ())
  | Secure { s_state = Running _; s_control; s_socket; _ } -> (
      if not s_control.parked then
        try Fd.interrupt s_socket Unwind.Park with Fd.Error _ -> ())
  | Secure _ -> (* Not in a fiber: parked already, or about to run. *) ()

(* The sweeper looks at least eight times per shortest timeout it enforces. *)
let adjust_tick c (t : Config.timeouts) =
  let tick = Float.min t.send (Float.min t.keep_alive t.request_header) /. 8. in
  let tick = Float.max 0.01 (Float.min 1. tick) in
  if tick < c.tick then c.tick <- tick

(* The pool of buffers of [size]. A reload that changes the sizes leaves
   the old pools behind: beyond four sizes, they are dropped. *)
let rec pool_of_size size = function
  | [] -> None
  | p :: rest ->
      if Buffer_pool.size p = size then Some p else pool_of_size size rest

let pool c size =
  match pool_of_size size c.pools with
  | Some p -> p
  | None ->
      let p = Buffer_pool.create ~size ~keep:max_spares in
      c.pools <- p :: (if List.length c.pools >= 4 then [] else c.pools);
      p

let storage c (config : Config.t) =
  match c.last_storage with
  | Some (seen, storage) when seen == config -> storage
  | Some _ | None ->
      let storage =
        {
          Pipeline.input = Buffer_pool.storage (pool c config.input_buffer);
          output = Buffer_pool.storage (pool c config.output_buffer);
        }
      in
      c.last_storage <- Some (config, storage);
      storage

(* Many connections holding buffers while they wait: give them back now
   rather than a tick later, so that a crowd of idle connections never holds
   a buffer each. Few: keep them, which saves taking them again at the next
   request. *)
let awaiting_input c (config : Config.t) await (control : Control.t) =
  if Buffer_pool.out (pool c config.output_buffer) > crowd then
    control.release ();
  await ()

(* A connection served by one fiber, registered for [drain] and [sweep];
   they cancel its scope, which ends it as [Peer_closed] (idle: nothing is
   owed; stuck in a write: nothing can be delivered). Parked, it waits for
   input in its fiber again, outside its handlers, and goes on (without a
   way to wait, it reads again). *)
let serve_stream c (config : Config.t) ?(pending = fun () -> false) ?await_input
    ?interrupt ~peer ~read ~write () =
  adjust_tick c config.timeouts;
  let control = Control.create c.draining in
  let await_input =
    Option.map
      (fun await () -> awaiting_input c config await control)
      await_input
  in
  let id = c.next_id in
  c.next_id <- id + 1;
  let rec resume pipeline =
    match Pipeline.resume pipeline with
    | Pipeline.Parked ->
        Option.iter (fun await -> await ()) await_input;
        resume pipeline
    | outcome -> outcome
  in
  Fiber.Scope.run (fun scope ->
      Hashtbl.replace c.live id (Fibered { control; scope; pending; interrupt });
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
              control;
              buffers = Some (storage c config);
            }
            { peer; read; write; await_input; file_sender = None }
            services
        in
        match Pipeline.serve pipeline with
        | Parked ->
            Option.iter (fun await -> await ()) await_input;
            resume pipeline
        | outcome -> outcome
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

let parked c =
  Hashtbl.fold
    (fun _ l n ->
      match l with
      | Secure { s_state = Watching; _ } -> n + 1
      | _ -> if (control_of l).parked then n + 1 else n)
    c.live 0

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
        (Services.timeout seconds (fun () ->
             try discard (1 lsl 20) with Net.Error _ -> ()))

(* sendfile(2) from the file to the socket; EINVAL, ENOSYS and ESPIPE say
   that the
   kernel cannot send from that descriptor (checked before any byte moves):
   the pipeline then reads and writes. *)
let file_sender socket : Conn.file_sender =
  {
    write_more = Net.write_more socket;
    send_file =
      (fun fd ~off ~len ->
        match Net.sendfile socket fd ~off ~len with
        | n -> n
        | exception
            Net.Error { op = "sendfile"; error = EINVAL | ENOSYS | ESPIPE } ->
            raise Conn.Cannot_send_file);
  }

let no_delay socket =
  try Unix.setsockopt (Fd.to_unix socket) Unix.TCP_NODELAY true
  with Unix.Unix_error _ -> ()

let counted c read =
  match c.received with
  | None -> read
  | Some count ->
      fun buf off len ->
        let n = read buf off len in
        count n;
        n

let lingering c (config : Config.t) socket =
  let input = pool c config.input_buffer in
  let buffer = Buffer_pool.take input in
  linger socket ~seconds:config.linger ~buffer;
  Buffer_pool.give input buffer

(* Plain connections waiting in their fibers beyond which an idle one parks
   at once: a crowd of idle connections holds no fiber stack each (OCaml's
   runtime keeps a freed stack for reuse, so a stack once taken by each of
   10,000 idle connections would stay with the process). A few busy ones
   keep theirs between requests: a wait in the fiber is one effect, while
   leaving parking sets the pipeline up again. Beyond a few dozen, parking
   costs less CPU per request too: the fibers' stacks no longer fit the
   caches (docs/server.md). *)
let crowd_in_fibers = 32

(* Fibers kept waiting for the next woken connection once theirs has parked
   or ended: a connection woken then costs a resumption, not a fiber made
   with its handlers and a stack grown again; a few serve a loop's bursts,
   and each keeps a stack. *)
let idle_workers_kept = 4

(* A failed close(2) of a socket still releases it (Linux); nothing is
   owed to anyone. *)
let close_quietly socket = try Net.close socket with Net.Error _ -> ()

let finish_plain c p =
  match p.state with
  | Ended -> ()
  | Running _ | Between | Watching | Woken ->
      p.state <- Ended;
      Hashtbl.remove c.live p.id;
      close_quietly p.socket;
      c.ended p.peer

(* The resumer of a parked connection's watch: input, or an error (it is
   to be closed: [end_live], or the loop closing the socket). Runs on the
   loop outside any fiber: it only queues the connection for the
   unparker. *)
let wake_parked c p : unit Braid.resumer =
 fun result ->
  match p.state with
  | Watching ->
      p.state <- Woken;
      c.parked_sockets <- c.parked_sockets - 1;
      if Result.is_error result then p.doomed <- true;
      if not (give_to_idle_worker c p) then (
        Queue.push p c.ready;
        wake_unparker c);
      true
  | Running _ | Between | Woken | Ended -> false

(* A socket connection's wait for its next request inside its fiber,
   counted for [crowd_in_fibers]. *)
let wait_in_fiber c config control await =
  c.waiting_in_fiber <- c.waiting_in_fiber + 1;
  match awaiting_input c config await control with
  | () -> c.waiting_in_fiber <- c.waiting_in_fiber - 1
  | exception e ->
      c.waiting_in_fiber <- c.waiting_in_fiber - 1;
      raise e

(* A socket the loop has seen no edge of yet (a fresh connection, or one
   whose reads OpenSSL makes) counts as readable: a look tells whether its
   request is there, so that one still waiting waits like any idle
   connection (counted, and parked by the sweeper). An end of stream or an
   error is for the read to find. *)
let settle_readiness socket =
  if Fd.may_have_input socket && peek socket = `Nothing then
    Fd.read_would_block socket

(* Beyond [crowd_in_fibers] waiting in their fibers, an idle connection
   with nothing to read parks at once (its buffers given back). *)
let park_if_crowded c (control : Control.t) socket =
  if
    (not (Fd.may_have_input socket))
    && c.waiting_in_fiber >= crowd_in_fibers
    && not (Atomic.get c.draining)
  then (
    control.release ();
    raise Unwind.Park)

(* The wait of a plain connection for its next request (see
   [crowd_in_fibers]). A connection parks only when it has nothing to
   read: a fresh one, which may have its request already (the loop knows
   nothing of it yet), is looked at first. *)
let plain_wait c p (control : Control.t) () =
  let socket = p.socket in
  if control.first then settle_readiness socket;
  if not (Fd.may_have_input socket) then (
    park_if_crowded c control socket;
    wait_in_fiber c p.config control (fun () -> Fd.await_input socket))

(* A fiber that serves plain connections in turn (its own, then woken
   ones), and the services in force in it if known: those its connections'
   handlers get when they perform service calls. *)
type worker = { fiber : Braid.Fiber.t; services : Services.t option }

(* [f] where [p]'s services are in force. A parked connection goes on in
   whichever fiber takes it: one of its listener's (the HTTPS redirect's
   have services of their own) or the unparker's. Usually the fiber has
   them already, which a comparison tells: no handler installed, no
   lookup. *)
let in_services_of (p : plain) (worker : worker) f =
  match worker.services with
  | Some services when services == p.services -> f ()
  | Some _ | None -> Services.run p.services f

(* Serves [p] in the calling fiber until it ends or parks, then a woken
   connection if one waits ([next_ready]). *)
let rec run_plain c p ~worker ~resumed =
  if p.doomed then ended c p ~worker (Ok Pipeline.Peer_closed)
  else
    let control = p.p_control and socket = p.socket in
    let outcome =
      Braid.Private.Fiber.run_scope_in worker.fiber (fun scope ->
          p.state <- Running scope;
          match
            in_services_of p worker (fun () ->
                let pipeline =
                  Pipeline.create
                    {
                      server = p.config;
                      dates = c.dates;
                      control;
                      buffers = Some (storage c p.config);
                    }
                    {
                      peer = Some p.peer;
                      read = counted c (Net.read_into socket);
                      write = Net.write_all socket;
                      await_input = Some (plain_wait c p control);
                      file_sender = Some (fun () -> file_sender socket);
                    }
                    p.services
                in
                if resumed then Pipeline.resume pipeline
                else Pipeline.serve pipeline)
          with
          | outcome -> Ok outcome
          | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
              Ok Pipeline.Peer_closed
          | exception e -> Error (e, Printexc.get_raw_backtrace ()))
    in
    p.state <- Between;
    match outcome with
    | Ok Parked -> park c p ~worker
    | ending -> ended c p ~worker ending

(* The end of [p], closed gracefully if the server ended it; then a woken
   connection, if one waits. A failure other than the socket's is raised
   once [p] is closed. *)
and ended c p ~worker outcome =
  (match outcome with
  | Ok (Pipeline.Peer_closed | Parked) -> finish_plain c p
  | Ok Server_closed ->
      Fun.protect
        ~finally:(fun () -> finish_plain c p)
        (fun () -> try lingering c p.config p.socket with Net.Error _ -> ())
  | Error (Net.Error { op; error }, _) ->
      Log.debug
        (Printf.sprintf "connection ended: %s: %s" op (Unix.error_message error));
      finish_plain c p
  | Error (e, bt) ->
      finish_plain c p;
      Printexc.raise_with_backtrace e bt);
  next_ready c ~worker

(* What [p] keeps while parked is itself, the socket's registration and the
   watch's resumer. Its fiber goes on with a woken connection, if any. *)
and park c p ~worker =
  let control = p.p_control in
  (* They would keep the pipeline's buffers and records alive. *)
  control.release <- ignore;
  control.idle_rounds <- 0;
  if p.doomed || Fd.may_have_input p.socket || Atomic.get c.draining then
    (* To be closed; or bytes came while it was leaving its handlers; or the
       server is draining, and the unparker may have stopped: it waits in a
       read of its fiber, which [close_idle] ends. *)
    run_plain c p ~worker ~resumed:true
  else (
    Fd.watch_input p.socket p.wake;
    p.state <- Watching;
    c.parked_sockets <- c.parked_sockets + 1;
    next_ready c ~worker)

(* A fiber whose connection has parked or ended serves a woken one, if any,
   before it ends: the unparker would otherwise make a fiber for it, with
   its handlers, and grow its stack again. Tail calls: a fiber may serve
   any number of connections in turn. *)
and next_ready c ~worker =
  match Queue.take_opt c.ready with
  | Some p -> run_plain c p ~worker ~resumed:true
  | None
    when List.compare_length_with c.idle_workers idle_workers_kept < 0
         && not (Atomic.get c.draining) -> (
      match
        Braid.suspend (fun resume ->
            c.idle_workers <- resume :: c.idle_workers;
            None)
      with
      | p -> run_plain c p ~worker ~resumed:true
      | exception No_more_work -> ())
  | None -> ()

(* Plain connections run only in fibers of the loop: the accept loop's, and
   the unparker's. *)
let current_fiber () =
  match Braid.Private.Fiber.current () with
  | Some fiber -> fiber
  | None ->
      invalid_arg "Braid_server.Connection: plain connections run in fibers"

let serve c (config : Config.t) socket peer =
  no_delay socket;
  adjust_tick c config.timeouts;
  (* Before the connection is registered: if either fails (no services in
     force, or not in a fiber: the caller's mistake), the socket is still
     closed and its end told, as for any connection. *)
  let fiber, services =
    match
      ( current_fiber (),
        match c.fixed_services with
        | Some services -> services
        | None -> Services.current () )
    with
    | found -> found
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        close_quietly socket;
        c.ended peer;
        Printexc.raise_with_backtrace e bt
  in
  let id = c.next_id in
  c.next_id <- id + 1;
  let p_control = Control.create c.draining in
  let rec p =
    {
      socket;
      peer;
      config;
      services;
      p_control;
      id;
      wake = (fun result -> wake_parked c p result);
      state = Between;
      doomed = false;
    }
  in
  Hashtbl.replace c.live id (Plain p);
  note_peak c;
  run_plain c p ~worker:{ fiber; services = Some services } ~resumed:false

module Tls = Braid_tls.Connection

let count_handshake c (outcome : Metrics.handshake) =
  Option.iter (fun count -> count outcome) c.handshaken

(* Once its fiber has returned, or with no fiber: what the connection
   holds is given back, its TLS state (a close_notify sent if the session
   is healthy) and its socket. *)
let finish_secure c s =
  match s.s_state with
  | Ended -> ()
  | Running _ | Between | Watching | Woken ->
      if s.s_state = Watching then c.parked_sockets <- c.parked_sockets - 1;
      (* Before the close, which would wake its watch ([wake_secure]). *)
      s.s_state <- Ended;
      Hashtbl.remove c.live s.s_id;
      Fun.protect
        ~finally:(fun () ->
          close_quietly s.s_socket;
          c.ended s.s_peer)
        (fun () -> Option.iter Tls.close s.session)

(* The resumer of a parked TLS connection's watch: input, or an error (to
   be closed). On the loop outside any fiber, as [wake_parked]: it only
   queues the connection for the unparker. *)
let wake_secure c s : unit Braid.resumer =
 fun result ->
  match s.s_state with
  | Watching ->
      s.s_state <- Woken;
      c.parked_sockets <- c.parked_sockets - 1;
      if Result.is_error result then s.s_doomed <- true;
      Queue.push s c.woken_tls;
      wake_unparker c;
      true
  | Running _ | Between | Woken | Ended -> false

let plain_http_on_tls =
  Framing.refusal ~status:"400 Bad Request"
    "plain HTTP request sent to the HTTPS port"

(* A TLS connection's deadlines, set at its accept as [Pipeline.serve] sets
   a new connection's (a TLS connection's pipeline is always
   [Pipeline.resume]d): the first request's head, ClientHello and handshake included, is
   due [request_header] seconds after the accept, and the connection counts
   as waiting for it (evictable, closed by a drain) while it is silent. *)
let start_control (control : Control.t) (config : Config.t) ~now =
  Control.start control config.timeouts ~now;
  control.phase <- Idle

(* A client speaking plain HTTP to the TLS port (its first byte a letter:
   a method, never a TLS record's type) is told so, as nginx does, rather
   than reset by a failed handshake; counted as a failed handshake. *)
let answer_plain_http c s =
  count_handshake c Failed;
  Log.debug "plain HTTP request on the HTTPS port: answered 400";
  (* Busy, not idle: neither evicted nor timed out while it lingers (the
     linger has its own bound). *)
  s.s_control.phase <- Body;
  Fun.protect
    ~finally:(fun () -> finish_secure c s)
    (fun () ->
      try
        Net.write_string s.s_socket plain_http_on_tls;
        lingering c s.s_config s.s_socket
      with Net.Error _ -> ())

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
let secure_wait c s tls (control : Control.t) () =
  let socket = s.s_socket in
  (* Only a connection past its handshake (whose state lives in its fiber)
     and with no bytes held by OpenSSL (which no socket event announces)
     may wait outside its fiber. *)
  if Tls.handshaken tls && not (Tls.buffered tls) then (
    settle_readiness socket;
    park_if_crowded c control socket);
  wait_in_fiber c s.s_config control (fun () -> Tls.await_input tls)

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
        match peek s.s_socket with
        | `Nothing when not (Atomic.get c.draining) ->
            (* The accept before the ClientHello, or a spurious wake-up. *)
            Fd.read_would_block s.s_socket;
            park_secure c s ~fiber
        | `End_or_error -> finish_secure c s
        | `Byte 'A' .. 'Z' -> answer_plain_http c s
        | `Byte _ | `Nothing -> (
            (* A record (OpenSSL judges it), or nothing yet while the
               server drains: the unparker may have stopped, so it waits in
               its fiber, which [close_idle] ends. *)
            match
              Tls.server s.certificates s.s_socket ~on_handshake:(fun tls ->
                  count_handshake c (if Tls.resumed tls then Resumed else Full))
            with
            | tls ->
                s.session <- Some tls;
                serve_secure c s tls ~fiber
            | exception e ->
                let bt = Printexc.get_raw_backtrace () in
                finish_secure c s;
                Printexc.raise_with_backtrace e bt))

and serve_secure c s tls ~fiber =
  let config = s.s_config and socket = s.s_socket in
  let outcome =
    Braid.Private.Fiber.run_scope_in fiber (fun scope ->
        s.s_state <- Running scope;
        let services =
          match c.tls_services with
          | Some services -> services
          | None -> Services.current ()
        in
        match
          Pipeline.resume
            (Pipeline.create
               {
                 server = config;
                 dates = c.dates;
                 control = s.s_control;
                 buffers = Some (storage c config);
               }
               {
                 peer = Some s.s_peer;
                 read = counted c (Tls.read_into tls);
                 write = Tls.write_all tls;
                 await_input = Some (secure_wait c s tls s.s_control);
                 file_sender = None;
               }
               services)
        with
        | outcome -> Ok outcome
        | exception Braid.Cancelled when Fiber.Scope.is_cancelled scope ->
            Ok Pipeline.Peer_closed
        | exception e -> Error (e, Printexc.get_raw_backtrace ()))
  in
  s.s_state <- Between;
  match outcome with
  | Ok Parked -> park_secure c s ~fiber
  | Ok Peer_closed ->
      count_unfinished c s;
      finish_secure c s
  | Ok Server_closed ->
      count_unfinished c s;
      Fun.protect
        ~finally:(fun () -> finish_secure c s)
        (fun () ->
          (* After the close_notify: what the client still sends is
             discarded as for a plain connection. *)
          Tls.close tls;
          try lingering c config socket with Net.Error _ -> ())
  | Error (e, bt) -> (
      count_unfinished c s;
      finish_secure c s;
      match e with
      | Net.Error { op; error } ->
          Log.debug
            (Printf.sprintf "connection ended: %s: %s" op
               (Unix.error_message error))
      | Braid_tls.Error { op; reason } ->
          Log.debug (Printf.sprintf "TLS connection ended: %s: %s" op reason)
      | e -> Printexc.raise_with_backtrace e bt)

(* What a parked TLS connection keeps is this record, its TLS state (whose
   buffers OpenSSL has released: SSL_MODE_RELEASE_BUFFERS) and its
   socket's registration; its fiber ends. *)
and park_secure c s ~fiber =
  let control = s.s_control in
  (* They would keep the pipeline's buffers and records alive. *)
  control.release <- ignore;
  control.idle_rounds <- 0;
  if
    s.s_doomed
    || Fd.may_have_input s.s_socket
    || Option.fold ~none:false ~some:Tls.buffered s.session
    || Atomic.get c.draining
  then
    (* To be closed; or bytes came (or OpenSSL holds some) while it left its
       handlers; or the server drains, and the unparker may have stopped:
       it waits in its fiber, which [close_idle] ends. *)
    run_secure c s ~fiber
  else
    match Fd.watch_input s.s_socket s.s_wake with
    | () ->
        s.s_state <- Watching;
        c.parked_sockets <- c.parked_sockets + 1;
        next_secure c ~fiber
    | exception Fd.Error _ -> finish_secure c s

(* A fiber whose TLS connection has parked serves a woken one, if any,
   before it ends, as [next_ready] does for plain ones: the unparker would
   otherwise make a fiber for it, with its handlers, and grow its stack
   again (beyond 32 busy connections, each request would). A tail call: a
   fiber may serve any number in turn. *)
and next_secure c ~fiber =
  match Queue.take_opt c.woken_tls with
  | Some s -> run_secure c s ~fiber
  | None -> ()

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
      let s_control = Control.create c.draining in
      start_control s_control config ~now;
      let id = c.next_id in
      c.next_id <- id + 1;
      let rec f =
        {
          s_socket = socket;
          s_peer = peer;
          s_config = config;
          certificates;
          s_control;
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
            run_plain c p
              ~worker:{ fiber = current_fiber (); services }
              ~resumed:true);
        (* One fiber at a time: the fibers already running take the woken
         connections as theirs park or end ([next_ready]), on stacks
         already grown. Another is made only while some stay queued past
         a turn of the run queue (those fibers wait, or have used their
         IO budget). *)
        Fiber.yield ();
        unpark ()
    | None when not (Queue.is_empty c.woken_tls) ->
        let f = Queue.take c.woken_tls in
        spawn (fun () -> run_secure c f ~fiber:(current_fiber ()));
        (* As for plain ones: the fibers of TLS connections that park take
         the others first ([next_secure]). *)
        Fiber.yield ();
        unpark ()
    | None when Atomic.get c.draining && c.parked_sockets = 0 -> ()
    | None ->
        (match
           Braid.suspend (fun resume ->
               c.unparker <- Some resume;
               None)
         with
        | () -> ()
        | exception e ->
            c.unparker <- None;
            raise e);
        unpark ()
  in
  unpark ()

let close_parked c =
  let left =
    Hashtbl.fold
      (fun _ l left ->
        match l with
        | Plain ({ state = Watching | Woken; _ } as p) -> `Plain p :: left
        | Secure ({ s_state = Watching | Woken; _ } as f) -> `Secure f :: left
        | Plain _ | Secure _ | Fibered _ -> left)
      c.live []
  in
  List.iter
    (function `Plain p -> finish_plain c p | `Secure f -> finish_secure c f)
    left
