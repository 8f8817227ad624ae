(** What plain and TLS socket connections share: [TCP_NODELAY], the count of
    bytes read, a graceful close. In fibers of the connection's loop. Internal.
*)

val no_delay : Braid_io.Net.socket -> unit
(** Sets [TCP_NODELAY] (responses are written whole); ignores an error. *)

val counted :
  Registry.context -> (bytes -> int -> int -> int) -> bytes -> int -> int -> int
(** [counted c read] is [read], its results counted by [c]'s [received] if any.
*)

val lingering : Registry.context -> Config.t -> Braid_io.Net.socket -> unit
(** [lingering c config socket] stops sending, then discards what the peer still
    sends until it closes, for at most [config.linger] seconds and 1 MiB (so
    that the kernel does not answer unread data with a reset, destroying the
    last response), with a buffer from [c]'s pool. Blocks the fiber.
    @raise Braid_io.Io_error if a read fails. *)

val must_linger : asked:bool -> Braid_io.Net.socket -> bool
(** [must_linger ~asked socket]: whether a connection the server ends should
    close with {!lingering}. Not if [asked] (its client asked for the close and
    nothing of its was left unread: {!Pipeline.closed_as_asked}) and no byte
    waits in [socket] (looked at only if the loop cannot tell: one [recv] with
    [MSG_PEEK]). Never blocks. *)

val current_fiber : unit -> Braid.Fiber.t
(** The calling fiber: socket connections run only in fibers of the loop.
    @raise Invalid_argument outside a fiber. *)

val run_in_scope :
  Braid.Fiber.t ->
  (Braid.Fiber.Scope.t -> 'a -> Pipeline.outcome) ->
  'a ->
  (Pipeline.outcome, exn * Printexc.raw_backtrace) result
(** [run_in_scope fiber serve arg] is {!serve_in_scope} with [serve scope arg]
    doing the work of [running] and [serve]: no closure made per call for them.
*)

val serve_in_scope :
  Braid.Fiber.t ->
  running:(Braid.Fiber.Scope.t -> unit) ->
  (unit -> Pipeline.outcome) ->
  (Pipeline.outcome, exn * Printexc.raw_backtrace) result
(** [serve_in_scope fiber ~running serve] runs [serve ()] in a new cancellation
    scope of [fiber] (the calling fiber), after telling [running] the scope (so
    that the registry can cancel the connection). A cancellation of that scope
    is [Ok Peer_closed]; any other exception is [Error] with its backtrace. *)
