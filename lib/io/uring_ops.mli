(** Completion-based socket IO on an io_uring ring: a receive or a send is a
    ring operation, queued by the fiber that needs it and submitted with the
    rest of the loop's turn by the loop's next wait ({!Uring_poller.wait}),
    which also hands the completions back here ({!complete}). A receiving fiber
    is suspended until its receive completes; a sending one is not (its bytes
    are queued: {!send}). The loop runs the others meanwhile.

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
(** What {!recv} returns (a negative number) when another fiber's receive is in
    flight on the descriptor: the caller then uses the readiness path (as two
    fibers reading one socket under epoll would). *)

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
(** [send t fd ~token ~more buf off len] takes up to [len > 0] bytes of [buf]
    from [off] for socket [fd] and returns how many (at least 1). It does not
    wait for their send: they are copied into a slot's buffer and sent after the
    bytes taken before them, in order, with [MSG_MORE] if [more]. Blocks the
    calling fiber only while the socket already has two slots' worth of bytes
    (up to 512 KiB) queued: back-pressure, so a peer that does not read makes no
    more memory wait here. The bytes taken stay queued if the fiber is then
    cancelled, and if [fd] is closed (the socket is held open by a duplicate
    descriptor until they have gone).

    A send that fails is reported by the socket's next {!send} or {!flush}, and
    by every one after: they raise [Unix.Unix_error] with its error ([EPIPE] or
    [ECONNRESET] for a vanished peer: no signal); the bytes queued behind it are
    dropped. Raises [EBADF] if [fd] is closed while the fiber waits for room.
    @raise Braid.Cancelled
      if the fiber is cancelled while it waits for room (none of the bytes of
      this call are then taken). *)

val flush : t -> token:int -> op:string -> unit
(** [flush t ~token ~op] blocks the calling fiber until the bytes queued by
    {!send} for [token]'s socket have gone, then raises a failed send's error as
    {!send} does (as [Unix.Unix_error (_, op, _)]). For a system call that
    writes to the socket behind the ring's back ([sendfile], [shutdown]).
    @raise Braid.Cancelled if the fiber is cancelled while it waits. *)

val queued : t -> token:int -> int
(** Bytes taken by {!send} for [token]'s socket and not yet sent. *)

val complete : t -> int -> int -> unit
(** [complete t user_data result] hands over an operation's completion:
    [user_data] is one that {!is_operation} recognises. Resumes its fiber, if it
    still waits. *)

val is_operation : int -> bool
(** Whether a completion's user data names an operation of this module. *)

val forget : t -> Unix.file_descr -> token:int -> bool
(** [forget t fd ~token] is called as [fd] is being closed: its receive in
    flight is cancelled, its fiber woken to fail with [EBADF], and the bytes
    kept for it dropped; its queued sends go on, on a duplicate of [fd] closed
    once they have gone (see {!send}). True if something was queued: the caller
    must submit it before closing [fd] (a pending receive holds the socket open;
    a send not yet submitted names [fd]). *)

val close_lingering : t -> unit
(** [close_lingering t] closes the duplicates of closed sockets whose bytes are
    still queued; called once the ring itself is closed (which cancelled their
    sends). *)

val interrupt_reader : t -> token:int -> exn -> unit
(** [interrupt_reader t ~token e] makes the fiber waiting in {!recv} on
    [token]'s descriptor, if any, raise [e]; its receive is cancelled as if the
    fiber had been (no data lost). *)

val waiting : t -> int
(** Fibers suspended in {!recv}, {!send} or {!flush}. *)
