(** Structured concurrency: a switch owns the fibers forked into it.

    [run f] returns only after every fiber forked on its switch has finished.
    The first failure (of [f] or of a fiber) cancels all the others and is
    re-raised by [run]. Resources attached with {!on_release} are released when
    [run] exits, in reverse order, even on failure or cancellation. This is what
    Trio calls a nursery and Eio a switch.
    {[
      let serve_both serve client_a client_b =
        Switch.run (fun sw ->
            ignore (Switch.fork sw (fun () -> serve client_a));
            ignore (Switch.fork sw (fun () -> serve client_b)))
    ]}
    Works under every Braid scheduler. *)

type t

val run : (t -> 'a) -> 'a
(** [run f] calls [f sw] and waits for all fibers of [sw]. If [f] or any fiber
    fails, [sw] is cancelled and [run] raises the failure ({!Fiber.Multiple} if
    several did). If the calling fiber is cancelled, the switch's fibers are
    cancelled too, and [run] raises [Cancelled] once they have finished. *)

val fork : t -> (unit -> 'a) -> 'a Fiber.handle
(** [fork sw f] runs [f] in a new fiber owned by [sw]. Its failure fails [sw]
    (joining its handle also reports it).

    Raises [Invalid_argument] if [sw] has finished. *)

val fail : t -> exn -> unit
(** [fail sw e] records [e] as a failure of [sw] and cancels it. *)

val cancel : t -> unit
(** [cancel sw] cancels the body and every fiber of [sw], without a failure:
    [run] then raises [Cancelled] unless something else failed. *)

val stop : t -> unit
(** [stop sw] finishes [sw] early, on purpose: it cancels the body and every
    fiber of [sw] as {!cancel} does, and none of them counts as failed. A body
    that still returns a value (it caught [Cancelled], or had returned already)
    gives {!run} its value; one interrupted by the stop makes {!run} raise
    [Cancelled] and {!run_stoppable} return [None]. Any thread. *)

val run_stoppable : (t -> 'a) -> 'a option
(** [run_stoppable f] is {!run}[ f] for a switch meant to be ended by {!stop}:
    [Some v] if the body returned [v], [None] if a stop interrupted it. Failures
    and the caller's own cancellation raise as with {!run}. *)

val is_cancelled : t -> bool

val on_release : t -> (unit -> unit) -> unit
(** [on_release sw release] calls [release ()] when [sw] finishes, shielded from
    cancellation, after the releases registered later (newest first). Exceptions
    from [release] fail the switch.

    Raises [Invalid_argument] if [sw] has finished. *)

type hook
(** A release registered with {!on_release_removable}. *)

val on_release_removable : t -> (unit -> unit) -> hook
(** [on_release_removable sw release] is {!on_release}, and returns a hook that
    {!remove_release} takes back: a resource closed before its switch finishes
    (an accepted connection on a long-lived switch) leaves nothing behind. *)

val remove_release : hook -> unit
(** [remove_release hook] forgets the release: [sw] will not call it. A no-op
    once [sw] has finished (the release has run) or after a first removal. Any
    thread; never blocks beyond a short lock. *)
