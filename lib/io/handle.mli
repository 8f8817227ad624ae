(** What {!Fd}, {!Net} and {!Udp} share: ownership of a registered descriptor by
    a switch, and the one loop that retries a call that would block. Internal.
*)

exception Error of { op : string; error : Unix.error; detail : string }
(** {!Braid_io.Io_error}. *)

val fail : string -> Unix.error -> 'a
(** [fail op error] raises {!Error} [{op; error; detail = ""}]. *)

val close : Loop.fd -> unit
(** {!Loop.close}, raising {!Error} [{op = "close"}]. *)

val attach : sw:Braid.Switch.t -> Loop.fd -> unit
(** [attach ~sw fd] makes [sw] close [fd] when it finishes.

    Raises [Invalid_argument] if [sw] has finished; [fd] is then closed. *)

val register :
  sw:Braid.Switch.t ->
  Loop.t ->
  Unix.file_descr ->
  socket:bool ->
  stream:bool ->
  op:string ->
  Loop.fd
(** [register ~sw loop unix ~socket ~op] is {!Loop.register} then {!attach};
    [unix] is closed if either fails. Raises {!Error} [{op = "epoll_ctl"}] if
    epoll refuses [unix]. *)

val usable : Loop.fd -> op:string -> unit
(** {!Loop.check_usable}, raising {!Error} [{op; error = EBADF}] if the
    descriptor is closed. *)

val wait : Loop.fd -> write:bool -> op:string -> unit
(** {!Loop.await}, raising {!Error} [{op; error = EBADF}] if the descriptor is
    or gets closed. *)

val wait_checked : Loop.fd -> write:bool -> op:string -> unit
(** {!Loop.await_checked}, raising {!Error} [{op; error = EBADF}] if the
    descriptor gets closed. *)

(** {1 Non-blocking calls} *)

(** The readiness a call that would block waits for. *)
type wanted =
  | Readable
      (** To read: the call is skipped (the fiber waits first) while the loop
          knows that [fd] was drained ({!Loop.may_be_readable}), and a call that
          would block records the drain ({!Loop.nothing_more_to_read}). *)
  | Acceptable  (** To read, without that record: a listener's accept. *)
  | Writable

val nonblocking :
  Loop.fd ->
  wanted ->
  op:string ->
  blocked:('r -> bool) ->
  (Loop.fd -> Unix.file_descr -> 'a -> 'b -> 'c -> 'r) ->
  'a ->
  'b ->
  'c ->
  'r
(** [nonblocking fd wanted ~op ~blocked call a b c] is
    [call fd (Loop.unix fd) a b c] (a buffer and its bounds, say: passed, not
    captured in a closure, so that a call allocates nothing), the first result
    of which [blocked] is false: after each that would block, the calling fiber
    waits for [fd] to be ready as [wanted] says, then calls again. The one place
    a braid.io operation waits for a descriptor and retries. The caller checks
    ownership first ({!usable}); [call] may raise [Unix.Unix_error] only
    ({!Syscall}'s stubs retry EINTR themselves). Blocks only the calling fiber.

    Raises {!Error} [{op; error; _}] if [call] raises
    [Unix.Unix_error (error, _, _)], or with [EBADF] if [fd] gets closed.
    @raise Braid.Cancelled if the fiber is cancelled while it waits. *)

val would_block : int -> bool
(** [would_block n] is [n < 0]: what {!Syscall}'s calls return when they would
    block. *)

val send_all :
  Loop.fd ->
  more:bool ->
  when_ready:(Loop.fd -> Unix.file_descr -> bytes -> int -> int -> int) ->
  bytes ->
  int ->
  int ->
  unit
(** [send_all fd ~more ~when_ready buf off len] writes [buf]'s [len] bytes from
    [off] to [fd]: queued on its ring ({!ring_send}, [more] saying more bytes
    follow) when it has one, else with [when_ready] (a system call that answers
    {!would_block}'s negative count) each time [fd] is writable. Blocks the
    calling fiber while [fd] cannot take them. The caller checked the range and
    ownership. Raises {!Error} [{op = "write"; _}]. *)

val ring_send :
  Uring_ops.t -> Loop.fd -> more:bool -> bytes -> int -> int -> int
(** [ring_send ops fd ~more buf off len] queues some of [buf]'s [len > 0] bytes
    from [off] for [fd] on its ring ({!Uring_ops.send}; [ops] is
    {!Loop.completions}[ fd]) and is how many it took. Checks that [fd] is still
    open first (the caller checked ownership). Does not wait for the send;
    blocks the calling fiber only while [fd] has too many bytes queued.

    Raises {!Error} [{op = "write"; _}] with the error of an earlier send that
    failed, or [EBADF] if [fd] is or gets closed.
    @raise Braid.Cancelled if the fiber is cancelled while it waits for room. *)

val flush : Loop.fd -> op:string -> unit
(** [flush fd ~op] waits until the bytes queued by {!ring_send} on [fd] have
    gone (at once on epoll, or for a descriptor not on the ring): before a
    system call that writes to [fd] directly. Blocks only the calling fiber.
    Raises {!Error} [{op; _}] with the error of a send that failed.
    @raise Braid.Cancelled if the fiber is cancelled while it waits. *)
