(** The connections of one event loop, in a table: what the sweeper, a drain, an
    eviction and the metrics need of each (its {!Progress.t}, how to end it,
    whether its request has come), and what they share (the [Date] cache, the
    draining flag, buffer pools, the counts of parked and waiting ones).

    Confined to the loop's domain (its fibers, and the loop's own callbacks
    outside any fiber), except {!idle}, read from any domain. Nothing here
    blocks: ending a connection only marks it, cancels its fiber or wakes its
    watch; the connection's fiber, or the one given it, closes it. Internal. *)

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

val progress_of : live -> Progress.t

val context :
  ?draining:bool Atomic.t ->
  ?fixed_services:Services.t ->
  ?received:(int -> unit) ->
  ?handshaken:(Metrics.handshake -> unit) ->
  ?ended:(Unix.sockaddr -> unit) ->
  unit ->
  context
(** See {!Connection.context}. *)

val burst : int
(** Connections at once that make a burst worth compacting the heap after. *)

val idle : context -> int
(** Connections waiting for a request at the sweeper's last look. Any domain. *)

val end_live : live -> unit
(** [end_live l] ends [l]: cancels its fiber, or, parked, marks it doomed and
    wakes its watch with an error (the fiber the unparker gives it closes it:
    never here, as the caller may hold a lock that closing takes). *)

val peek : Net.socket -> [ `Byte of char | `Nothing | `End_or_error ]
(** What a read of the socket would find now ([recv] with [MSG_PEEK]); never
    blocks. *)

val pending : live -> bool
(** Bytes are waiting to be read: the connection's request has come. *)

val close_idle : context -> unit
(** See {!Connection.close_idle}. *)

val evict_idle : context -> now:int -> idle_for:int -> bool
(** See {!Connection.evict_idle}. *)

val buffers_held : context -> int
val note_peak : context -> unit

val adjust_tick : context -> Config.timeouts -> unit
(** [adjust_tick c timeouts] makes the sweeper look at least eight times per
    shortest timeout of [timeouts] (between 10 ms and a second). *)

val pool : context -> int -> Buffer_pool.t
(** [pool c size] is the loop's pool of buffers of [size]: beyond four sizes
    (reloads that change them), the older pools are dropped. *)

val storage : context -> Config.t -> Pipeline.buffers
(** The pools a connection of this configuration takes its buffers from;
    remembered for the configuration last asked for (a plain connection asks
    each time it leaves parking). *)

val parked : context -> int
(** Connections waiting for a request outside their handlers. *)

val close_quietly : Net.socket -> unit
(** See {!Connection.close_quietly}. *)

val finish_plain : context -> plain -> unit
(** [finish_plain c p] takes [p] out of the table, closes its socket and tells
    [c.ended]; once [p] is [Ended], does nothing. *)

val finish_secure : context -> secure -> unit
(** As {!finish_plain}, freeing its TLS state first (a close_notify sent if the
    session is healthy). *)

val shut_down_upgraded : context -> unit
(** Tells each upgraded connection that the server drains: a blocked read raises
    {!Braid_web.Upgraded.Shutdown} (with no way to wake it, it is cancelled). *)
