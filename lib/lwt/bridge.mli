(** The machinery behind {!Braid_lwt}: Lwt's thread as a Braid scheduler.

    A bridge runs Braid fibers on the systhread that runs Lwt's loop. Their
    resumptions are tasks: a resumer called on that thread queues the task
    locally; one called anywhere else pushes it on a lock-free queue and sends
    an [Lwt_unix] notification (at most one in flight), whose handler, run by
    Lwt's loop, drains the queue. Everything here but {!await_lwt}'s
    cross-thread path must be called on Lwt's thread. See {!Braid_lwt} for the
    user-facing contracts. *)

module Owner : sig
  type t

  val create : unit -> t
end

type t

val create : unit -> t
(** [create ()] makes a bridge for the calling systhread, which must be the one
    that runs [Lwt_main.run]. Never blocks. *)

val check_thread : t -> string -> unit
(** [check_thread t what] raises [Invalid_argument] (naming [what]) unless
    called on [t]'s thread. *)

val run : ?owner:Owner.t -> t -> (unit -> 'a) -> 'a Lwt.t
(** [run ?owner t f] runs [f] as a Braid fiber on Lwt's thread (as [owner]'s
    fiber if given). The promise resolves with [f]'s outcome; cancelling it
    cancels the fiber, and it is rejected with [Lwt.Canceled] only if the fiber
    ended by that cancellation.

    Raises [Invalid_argument] off Lwt's thread, or if [owner] is running another
    operation. *)

val run_now : owner:Owner.t -> t -> (unit -> 'a) -> 'a
(** [run_now ~owner t f] runs [f], which must never block, as [owner]'s fiber
    and returns its result or raises its exception.

    Raises [Invalid_argument] as {!run} does, or if [f] blocked. *)

val await_lwt : t -> 'a Lwt.t -> 'a
(** See {!Braid_lwt.await_lwt}. *)
