(** Mutual exclusion locks owned by a fiber (or, outside a scheduler, a
    systhread).

    Waiting for the lock blocks only the calling fiber. The lock is handed to
    waiters in arrival order; a waiter cancelled while queued never gets it: the
    lock goes to the next one. Lock-free. *)

type t

val create : unit -> t

val lock : t -> unit
(** [lock m] acquires [m], waiting while another fiber or thread holds it.

    Raises [Invalid_argument] if the caller already holds [m].
    @raise Braid.Cancelled if cancelled while waiting (the lock is not held). *)

val try_lock : t -> bool
(** [try_lock m] acquires [m] if it is free; never blocks. *)

val unlock : t -> unit
(** [unlock m] releases [m], handing it to the first live waiter.

    Raises [Invalid_argument] if the caller does not hold [m]. *)

val protect : t -> (unit -> 'a) -> 'a
(** [protect m f] runs [f] holding [m] and releases it however [f] ends. *)

val is_locked : t -> bool

(**/**)

(* For [Condition]: the owner id is taken before suspending, because
   [Fiber.self_id] cannot be called from inside a block function. *)

val lock_as : t -> int -> unit
val check_owner : t -> int -> string -> unit
val release : t -> unit
