(** The contract between schedulers and synchronisation structures.

    A structure that must wait calls [suspend block]. The scheduler running the
    caller creates a {!resumer} for it and calls [block resumer]: [block] either
    completes at once ([Some v]) or publishes the resumer where a later event
    will find it and returns [None]. Whoever calls the resumer decides how the
    caller resumes. Without a scheduler, the caller parks its systhread. *)

type 'a resumer = ('a, exn) result -> bool
(** [resumer r] resumes the suspended caller with [r]: [Ok v] makes the blocking
    call return [v], [Error e] makes it raise [e]. It may be called from any
    domain or systhread. Only the first call counts: it returns [true] if it
    resumed the caller, [false] if the caller had already been resumed, in
    particular because it was cancelled. A structure handing over a value or a
    lock and getting [false] must hand it to someone else. *)

type _ Effect.t +=
  | Suspend : ('a resumer -> 'a option) -> 'a Effect.t
        (** The one effect Braid schedulers handle for synchronisation. *)

val suspend : ('a resumer -> 'a option) -> 'a
(** [suspend block] suspends the caller until it is resumed.

    [block] runs at once, in the handler's context (keep it short, never block
    in it). It returns [Some v] to complete without waiting, in which case it
    must not have handed the resumer to anyone; or [None] after publishing the
    resumer. If [block] raises, [suspend] raises the same exception.

    Under a Braid scheduler only the calling fiber waits, and a cancelled fiber
    is woken with {!Cancelled}. With no handler (a bare domain or systhread),
    the caller spins briefly, then sleeps on a mutex/condition owned by its
    thread; it cannot be cancelled. *)

exception Cancelled
(** Raised by a blocking call of a fiber that has been cancelled. *)
