(** Structured concurrency: a switch owns the fibers forked into it.

    [run f] returns only after every fiber forked on its switch has finished.
    The first failure (of [f] or of a fiber) cancels all the others and is
    re-raised by [run]. Resources attached with {!on_release} are released when
    [run] exits, in reverse order, even on failure or cancellation. This is what
    Trio calls a nursery and Eio a switch.
    {[
      Switch.run (fun sw ->
          Switch.fork sw (fun () -> serve client_a);
          Switch.fork sw (fun () -> serve client_b))
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

val is_cancelled : t -> bool

val on_release : t -> (unit -> unit) -> unit
(** [on_release sw release] calls [release ()] when [sw] finishes, shielded from
    cancellation. Exceptions from [release] fail the switch.

    Raises [Invalid_argument] if [sw] has finished. *)
