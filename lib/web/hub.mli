(** Publish and subscribe across fibers and domains: what a chat room, a live
    feed or a notification push needs to reach every WebSocket connection of a
    server, whatever event loop (domain) each one lives on.

    {[
      let room : string Hub.t = Hub.create ~capacity:256 ()

      let chat request =
        Websocket.accept request (fun ws ->
            Hub.forward room ws (fun () ->
                let rec loop () =
                  match Websocket.receive ws with
                  | `Text text ->
                      Hub.publish room text;
                      loop ()
                  | `Binary _ -> loop ()
                  | `Close _ -> ()
                in
                loop ()))
    ]}

    {b Why a hub.} A {!Websocket.t} may be written only by fibers of the event
    loop that accepted it (sending from another domain raises
    [Invalid_argument]). The hub gives each subscriber a bounded queue of its
    own, which any domain may fill; the subscriber's fiber, on its own loop,
    takes from it and sends ({!forward} does both).

    {b Threads.} Every function may be called from any fiber, domain, pool task
    or systhread. {!publish}, {!subscribe} and {!unsubscribe} never block;
    {!receive} blocks only the calling fiber (a bare thread parks), and needs no
    particular scheduler.

    {b Order.} A subscriber receives the messages of one publisher in the order
    they were published. Messages of publishers running at the same time may
    reach two subscribers in different orders. A subscriber receives every
    message published after {!subscribe} returned, until its subscription ends;
    none published before.

    {b Slow subscribers.} Each subscription holds at most [capacity] messages
    not yet received. A message that finds it full is not queued: the
    subscription ends at once with {!Too_slow}, its [on_overflow] runs (in the
    publisher's fiber), and the publisher goes on to the next subscriber. So a
    client that stopped reading never slows a publisher down nor makes memory
    grow: it is dropped, and may reconnect. Raise [capacity] for bursts.

    {b Ending.} A subscription ends when {!unsubscribe} is called, when it is
    dropped as too slow, or, under {!with_subscription} and {!forward}, when the
    function returns or raises (cancellation included). Once it has ended,
    {!receive} returns [Error] at once, even with messages still queued, and a
    receiver blocked in it wakes up. *)

type 'a t
(** A hub of messages of type ['a]. *)

type 'a subscription
(** One subscriber's queue. *)

(** Why a subscription ended. *)
type ended =
  | Unsubscribed  (** {!unsubscribe}, or the end of {!with_subscription}. *)
  | Too_slow  (** A message found its queue full: the subscriber was dropped. *)

val create : ?capacity:int -> unit -> 'a t
(** [create ~capacity ()] is a hub without subscribers whose subscriptions each
    hold at most [capacity] (default 256) messages not yet received.

    Raises [Invalid_argument] if [capacity < 1]. *)

val publish : 'a t -> 'a -> unit
(** [publish hub m] queues [m] for every current subscriber, dropping those
    whose queue is full (see above). Never blocks; any domain. Costs one queue
    operation per subscriber. *)

val subscribe : ?on_overflow:(unit -> unit) -> 'a t -> 'a subscription
(** [subscribe hub] is a new subscription, receiving from now on. [on_overflow]
    (default nothing) runs once if it is dropped as too slow, in the publisher's
    fiber: it must not block (to close a WebSocket, use {!Websocket.abort},
    which never does). An exception it raises comes out of {!publish}.

    Prefer {!with_subscription}: a subscription never unsubscribed stays in the
    hub, and is dropped only when its queue fills. *)

val unsubscribe : 'a subscription -> unit
(** [unsubscribe s] ends [s] (if it had not ended) and removes it from its hub.
    Idempotent; never blocks; any domain. *)

val receive : 'a subscription -> ('a, ended) result
(** [receive s] is the oldest message queued for [s], waiting for one while
    there is none; [Error why] once [s] has ended. Blocks the calling fiber.

    Raises [Invalid_argument] if another fiber is in [receive] on [s].
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting (no message is lost: it stays
      queued). *)

val with_subscription :
  ?on_overflow:(unit -> unit) -> 'a t -> ('a subscription -> 'b) -> 'b
(** [with_subscription hub f] is [f s] for a new subscription [s], unsubscribed
    when [f] returns or raises. *)

val subscribers : 'a t -> int
(** The number of subscriptions that have not ended. *)

val forward : ?binary:bool -> string t -> Websocket.t -> (unit -> 'a) -> 'a
(** [forward hub ws f] subscribes [ws] to [hub] while [f ()] runs: a fiber
    forked for it sends every message published (a text frame; a binary one with
    [~binary:true]) until [f] returns or raises, which unsubscribes [ws];
    [forward] then waits for that fiber and returns [f]'s result. [f] is usually
    the loop that {!Websocket.receive}s; call it in the callback of
    {!Websocket.accept}, in the connection's fiber. Blocks that fiber.

    A connection too slow for the hub is aborted ({!Websocket.abort}, code
    [1013] "too slow"): its {!Websocket.receive} returns [`Close] and [f] should
    return. Sending stops quietly once the connection is closed
    ({!Websocket.Closed}). *)

(** Hubs by key, made on first use: one per chat room, per user, per document.
*)
module Topics : sig
  type ('k, 'a) hubs

  val create : ?capacity:int -> unit -> ('k, 'a) hubs
  (** [create ~capacity ()] has no hub yet; each hub it makes is
      {!val-create}[ ~capacity ()].

      Raises [Invalid_argument] if [capacity < 1]. *)

  val hub : ('k, 'a) hubs -> 'k -> 'a t
  (** [hub hubs key] is [key]'s hub, made on the first call for [key] (keys
      compared with [=] and hashed with [Hashtbl.hash]). Any domain; never
      blocks (a mutex held for one table operation). A hub stays once made: keep
      the keys to a bounded set (users, rooms), not one per request. *)
end
