(** Counting semaphores.

    [acquire] waits while the count is zero; permits go to waiters in arrival
    order and never to a cancelled one. Lock-free. *)

type t

val make : int -> t
(** [make n] has [n] permits.

    Raises [Invalid_argument] if [n < 0]. *)

val acquire : t -> unit
(** [acquire s] takes a permit, waiting while there is none. Blocks only the
    calling fiber.
    @raise Braid.Cancelled if cancelled while waiting (no permit taken). *)

val try_acquire : t -> bool
(** [try_acquire s] takes a permit if one is available; never blocks. *)

val release : t -> unit
(** [release s] returns a permit, handing it to the first live waiter. *)

val get_value : t -> int
(** The number of available permits. *)
