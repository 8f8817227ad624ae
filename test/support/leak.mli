(** Space-leak checks: a million cycles of an operation must leave the live heap
    flat. *)

val block_then_cancel : (unit -> unit) -> unit
(** [block_then_cancel block] forks [block] in the current scheduler, lets it
    block, cancels it and joins it. Fails the test if [block] completed instead
    of raising {!Braid.Cancelled}. *)

val stays_flat : ?cycles:int -> string -> (unit -> unit) -> unit
(** [stays_flat name cycle] runs [cycle] 10,000 times to warm up, then [cycles]
    times (default a million), and fails the test if the live heap (after a full
    major collection) grew by more than 20,000 words: fewer cannot be a
    per-cycle leak. *)
