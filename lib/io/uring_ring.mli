(** The io_uring instance itself: thin stubs over liburing (uring_stubs.c),
    shared by the readiness poller ({!Uring_poller}) and the completion-based
    operations ({!Uring_ops}). Every call but {!create} queues submission
    entries without entering the kernel, except {!poll_remove} and {!wait},
    which submit what is queued. None blocks the domain except {!wait} with a
    non-zero timeout.

    Only the thread that created a ring may use it (it is set up single-issuer).
    Errors are [Unix.Unix_error]. Internal. *)

type t

val create : int -> defer:bool -> t
(** [create entries ~defer] is a ring of [entries] submission entries (see
    {!Uring_poller.create} for when the kernel refuses one), set up with
    [IORING_SETUP_DEFER_TASKRUN] if [defer] and the kernel takes it. *)

val close : t -> unit
(** Idempotent. What is in flight is cancelled with it; the operations' buffers
    are freed after. *)

val poll_add : t -> Unix.file_descr -> int -> int -> unit
(** [poll_add t fd mask user_data] queues a multishot poll of [fd] for [mask]
    (epoll's flags; errors and hang-ups are always reported). *)

val poll_remove : t -> int -> int -> unit
(** [poll_remove t user_data own] removes the poll under [user_data], submitting
    it and what is queued at once; [own] names its completion if it finds
    nothing. *)

val wait : t -> int array -> int -> int
(** [wait t completions timeout_ms] submits what is queued, waits up to
    [timeout_ms] (0: not at all, -1: no limit) for a completion, and stores up
    to a third of [completions]' length as (user data, result, more) triples.
    Returns how many. *)

(** {1 Completion-based operations}

    Each has a slot (a small integer, see {!Uring_ops}) whose buffer, owned by
    the C side, holds its bytes while the kernel may use them. *)

val recv : t -> Unix.file_descr -> int -> int -> int -> unit
(** [recv t fd slot len user_data] queues a receive of up to [len] bytes into
    [slot]'s buffer. *)

val append : t -> int -> int -> bytes -> int -> int -> unit
(** [append t slot pos buf off len] copies [buf]'s [len] bytes from [off]
    (checked by the caller) into [slot]'s buffer at [pos], keeping its first
    [pos] bytes (a [pos] of 0 discards them). The slot must not be in flight. *)

val send : t -> Unix.file_descr -> int -> int -> int -> bool -> int -> unit
(** [send t fd slot from len more user_data] queues the send of [len] bytes of
    [slot]'s buffer from [from] ([MSG_NOSIGNAL], and [MSG_MORE] if [more]); the
    bytes were put there by {!append}. *)

val copy_out : t -> int -> int -> bytes -> int -> int -> unit
(** [copy_out t slot from buf off len] copies [len] bytes of [slot]'s buffer
    from [from] into [buf] at [off]. Bounds are not checked. *)

val cancel : t -> int -> int -> unit
(** [cancel t target own] queues the cancellation of the operation under
    [target] ([IORING_OP_ASYNC_CANCEL]); a completion of its own comes (under
    [own]) only if it found nothing. *)

val cancel_fd : t -> Unix.file_descr -> int -> unit
(** [cancel_fd t fd own] queues the cancellation of every operation on [fd]. *)

val ecanceled : int
(** The errno a cancelled operation completes with (negated). *)

val fail : int -> string -> 'a
(** [fail errno op] raises [Unix.Unix_error] for [errno]. *)

val submit : t -> unit
(** [submit t] submits what is queued now, and runs the task work it causes (one
    system call). *)
