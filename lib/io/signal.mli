(** Waiting for signals in a fiber.

    {[
      let reload_on_sighup reload =
        Switch.run @@ fun sw ->
        let signals = Signal.subscribe ~sw [ Sys.sighup; Sys.sigterm ] in
        let rec loop () =
          if Signal.wait signals = Sys.sighup then (
            reload ();
            loop ())
        in
        loop ()
    ]}

    While a subscription exists for a signal (in any loop of the process),
    Braid's handler replaces the signal's previous disposition, so for instance
    SIGINT no longer kills the process; the previous disposition (default,
    ignore, or an OCaml [Sys.signal] handler) comes back when the last
    subscription ends. Each delivery is counted by a C handler that writes to an
    eventfd every subscribed loop watches, so a loop sleeping in [epoll_wait]
    wakes at once whichever thread took the signal. Meant for SIGHUP, SIGTERM,
    SIGINT, SIGUSR1, SIGUSR2 and the like. Do not also install handlers for
    these signals with [Sys.signal] meanwhile. *)

type t
(** A subscription: the deliveries of some signals since it was made. *)

val subscribe : sw:Braid.Switch.t -> int list -> t
(** [subscribe ~sw signals] starts counting deliveries of [signals] (OCaml
    numbers: [Sys.sighup], [Sys.sigterm], ...) for the calling fiber's loop,
    until [sw] finishes. Does not block.

    Raises [Invalid_argument] if [signals] is empty or one of them cannot be
    caught ([Sys.sigkill], [Sys.sigstop]), or outside a fiber of
    {!Braid_io.run}. Raises {!Braid_io.Io_error} if the loop cannot watch the
    signals' descriptor (epoll out of memory, say). *)

val wait : t -> int
(** [wait sub] returns a signal of [sub] delivered since the previous [wait]
    returned it (or since {!subscribe}), waiting (this fiber only) if there is
    none. Several deliveries of one signal in between count as one, as Unix
    signals do. Signals are checked in the order given to {!subscribe}.

    Raises [Invalid_argument] if [sub]'s switch has finished, or from a fiber of
    another loop.
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

val await : int list -> int
(** [await signals] waits for the next delivery of one of [signals] and returns
    it: {!subscribe} then {!wait}, on a switch of its own. Deliveries before the
    call are not seen.
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)
