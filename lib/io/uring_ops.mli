(** Completion-based socket IO on an io_uring ring: a receive or a send is a
    ring operation, queued by the fiber that needs it and submitted with the
    rest of the loop's turn by the loop's next wait ({!Uring_poller.wait}),
    which also hands the completions back here ({!complete}). The fiber is
    suspended until its operation completes; the loop runs the others meanwhile.

    The bytes travel through a buffer of the operation's slot, owned by the C
    side (an OCaml [bytes] may move while the kernel holds it): a receive copies
    out of it once completed, a send copies into it when queued.

    Cancellation loses no data. A fiber cancelled while its operation is pending
    asks the kernel to cancel it ([IORING_OP_ASYNC_CANCEL]) and leaves it
    behind: if it completes anyway, a receive's bytes are kept for the next read
    of the descriptor, and the next operation of the same kind on the descriptor
    takes over (adopts) the pending one rather than racing it.

    Everything here runs on the ring's thread; {!recv} and {!send} only in one
    of its loop's fibers. Internal. *)

type t

val create : Uring_ring.t -> t

val busy : int
(** What {!recv} and {!send} return (a negative number) when another fiber's
    operation of the same kind is in flight on the descriptor: the caller then
    uses the readiness path (as two fibers reading one socket under epoll
    would). *)

val recv :
  t -> Unix.file_descr -> token:int -> ready:bool -> bytes -> int -> int -> int
(** [recv t fd ~token ~ready buf off len] reads up to [len > 0] bytes of socket
    [fd] (registered with the loop under [token]) into [buf] at [off] (bounds
    checked by the caller): bytes kept from a cancelled read first; else, if
    [ready] (bytes may be waiting: {!Loop.may_be_readable}), recv(2), which
    returns at once what is there; else, or if that would block, one receive on
    the ring. Returns how many (0 at end of stream), or {!busy}. Blocks the
    calling fiber until the receive completes.

    Raises [Unix.Unix_error] with the receive's error, or [EBADF] if [fd] is
    closed meanwhile.
    @raise Braid.Cancelled
      if the fiber is cancelled while it waits; the receive is then cancelled,
      and what it may still get is kept. *)

val send :
  t -> Unix.file_descr -> token:int -> more:bool -> bytes -> int -> int -> int
(** [send t fd ~token ~more buf off len] sends some of [buf]'s [len > 0] bytes
    from [off] with one send on the ring ([MSG_MORE] too if [more]), and returns
    how many went (at least 1), or {!busy}. Blocks the calling fiber until the
    send completes.

    Raises [Unix.Unix_error] with the send's error ([EPIPE] for a vanished peer:
    no signal), or [EBADF] if [fd] is closed meanwhile.
    @raise Braid.Cancelled
      if the fiber is cancelled while it waits (the send is then cancelled; some
      of its bytes may have gone). *)

val complete : t -> int -> int -> unit
(** [complete t user_data result] hands over an operation's completion:
    [user_data] is one that {!is_operation} recognises. Resumes its fiber, if it
    still waits. *)

val is_operation : int -> bool
(** Whether a completion's user data names an operation of this module. *)

val forget : t -> Unix.file_descr -> token:int -> bool
(** [forget t fd ~token] is called as [fd] is being closed: its operations in
    flight are cancelled, their fibers woken to fail with [EBADF], and the bytes
    kept for it dropped. True if a cancellation was queued: the caller must
    submit it before closing [fd] (a pending receive holds the socket open). *)

val interrupt_reader : t -> token:int -> exn -> unit
(** [interrupt_reader t ~token e] makes the fiber waiting in {!recv} on
    [token]'s descriptor, if any, raise [e]; its receive is cancelled as if the
    fiber had been (no data lost). *)

val waiting : t -> int
(** Fibers suspended in {!recv} or {!send}. *)
