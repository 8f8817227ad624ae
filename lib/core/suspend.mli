(** The contract between schedulers and synchronisation structures: the
    [Suspend] effect, and how a caller no scheduler handles parks its thread.
    Exported by {!Braid}, where the contract is documented. *)

type 'a resumer = ('a, exn) result -> bool
type _ Effect.t += Suspend : ('a resumer -> 'a option) -> 'a Effect.t

val suspend : ('a resumer -> 'a option) -> 'a
(** Without a handler, [block] gets a resumer that wakes the calling thread,
    which spins briefly, then sleeps on a mutex/condition cached per domain. *)

exception Cancelled
