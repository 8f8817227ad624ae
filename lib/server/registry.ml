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
  progress : Progress.t;
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
  p_progress : Progress.t;
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
  s_progress : Progress.t;
      (** Its deadlines from its accept (see [start_progress]). *)
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

let progress_of = function
  | Fibered f -> f.progress
  | Plain p -> p.p_progress
  | Secure s -> s.s_progress

let max_spares = 64

(* Connections at once that make a burst worth compacting after. *)
let burst = 512
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
      try Fd.interrupt socket Braid.Cancelled with Braid_io.Io_error _ -> ())
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
          Progress.is_idle (progress_of l) && not (pending l)
        then l :: idle
        else idle)
      c.live []
  in
  List.iter end_live idle

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
  && Progress.is_idle (progress_of l)
  && not (is_ending l)

let evict_idle c ~now ~idle_for =
  let rec choose spared =
    let fresh_waiting = ref false
    and oldest_fresh = ref None
    and oldest_kept = ref None in
    Hashtbl.iter
      (fun id l ->
        if evictable l && not (List.mem id spared) then (
          let progress = progress_of l in
          if progress.first then fresh_waiting := true;
          if now - progress.idle_since >= idle_for then
            let oldest = if progress.first then oldest_fresh else oldest_kept in
            match !oldest with
            | Some (_, o) when (progress_of o).idle_since <= progress.idle_since
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

let parked c =
  Hashtbl.fold
    (fun _ l n ->
      match l with
      | Secure { s_state = Watching; _ } -> n + 1
      | _ -> if (progress_of l).parked then n + 1 else n)
    c.live 0

(* A failed close(2) of a socket still releases it (Linux); nothing is
   owed to anyone. *)
let close_quietly socket = try Net.close socket with Braid_io.Io_error _ -> ()

let finish_plain c p =
  match p.state with
  | Ended -> ()
  | Running _ | Between | Watching | Woken ->
      p.state <- Ended;
      Hashtbl.remove c.live p.id;
      close_quietly p.socket;
      c.ended p.peer

module Tls = Braid_tls.Connection

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

(* An upgraded connection is told, so that its protocol can say goodbye:
   a blocked read raises [Upgraded.Shutdown], and so does every read that
   would block from now on. Without a way to wake it, it is cancelled. *)
let shut_down_upgraded c =
  let upgraded =
    Hashtbl.fold
      (fun _ l upgraded ->
        if (progress_of l).phase = Upgraded then l :: upgraded else upgraded)
      c.live []
  in
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
