(** Bounded FIFO channels between any fibers, domains and threads.

    A channel of capacity [n > 0] buffers up to [n] values; capacity [0] is a
    rendezvous: [send] waits for a receiver. Senders and receivers are served in
    arrival order. Each value sent is received exactly once, even when waiters
    are cancelled. Lock-free.

    After {!close}, [send] raises {!Closed}; receivers first drain every value
    already sent (including those of senders still blocked), then raise
    {!Closed}. *)

type 'a t

exception Closed

val create : int -> 'a t
(** [create n] has capacity [n].

    Raises [Invalid_argument] if [n < 0]. *)

val send : 'a t -> 'a -> unit
(** [send c v] sends [v], waiting while the buffer is full (or, capacity 0,
    until a receiver takes it). Blocks only the calling fiber.
    @raise Closed if [c] is closed (then [v] was not sent).
    @raise Braid.Cancelled
      if cancelled while waiting (then [v] was not sent; if the cancellation
      comes after [v] was accepted, [send] returns and the next blocking call
      raises). *)

val recv : 'a t -> 'a
(** [recv c] takes the oldest value, waiting while there is none.
    @raise Closed once [c] is closed and drained.
    @raise Braid.Cancelled if cancelled while waiting; no value is lost. *)

val try_send : 'a t -> 'a -> bool
(** [try_send c v] sends [v] if that needs no waiting.
    @raise Closed if [c] is closed. *)

val try_recv : 'a t -> 'a option
(** [try_recv c] takes a value if one is ready.
    @raise Closed once [c] is closed and drained. *)

val close : 'a t -> unit
(** [close c] closes [c] and wakes blocked receivers (which raise {!Closed}).
    Idempotent. *)

val is_closed : 'a t -> bool

val length : 'a t -> int
(** Values buffered now (not counting blocked senders). *)

val capacity : 'a t -> int
