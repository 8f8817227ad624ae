(** Write-once variables.

    A promise is filled once, with a value or an exception; any number of
    fibers, domains and threads can wait for it. Lock-free.
    {[
      let compute expensive use =
        let p = Promise.create () in
        let _ = Braid.Fiber.fork (fun () -> Promise.fill p (expensive ())) in
        use (Promise.await p)
    ]} *)

type 'a t

exception Already_filled
(** Raised by filling a promise a second time. *)

val create : unit -> 'a t
(** [create ()] is a new unfilled promise. *)

val fill : 'a t -> 'a -> unit
(** [fill p v] fills [p] with [v] and wakes every waiter. Never blocks.
    @raise Already_filled if [p] was already filled. *)

val fill_error : ?backtrace:Printexc.raw_backtrace -> 'a t -> exn -> unit
(** [fill_error p e ~backtrace] fills [p] with the exception [e]: awaiters raise
    [e] with [backtrace] (where [e] was raised, typically
    [Printexc.get_raw_backtrace ()] in the handler that caught it; default: the
    caller of [fill_error]).
    @raise Already_filled if [p] was already filled. *)

val try_fill : 'a t -> ('a, exn) result -> bool
(** [try_fill p r] fills [p] with [r] if it is unfilled; [false] otherwise. An
    [Error] gets the caller's backtrace, as with {!fill_error}. *)

val await : 'a t -> 'a
(** [await p] returns [p]'s value, waiting until it is filled. Blocks only the
    calling fiber (or, outside a scheduler, the calling thread).

    Raises [e], with the backtrace it was filled with, if [p] was filled with
    [fill_error p e].
    @raise Braid.Cancelled if the calling fiber is cancelled while waiting. *)

val peek : 'a t -> ('a, exn) result option
(** [peek p] is [p]'s content without waiting; [None] while unfilled. *)

val unobserved_error : 'a t -> (exn * Printexc.raw_backtrace) option
(** [unobserved_error p] is the exception [p] was filled with, and its
    backtrace, if no {!await} has raised it and no {!peek} has returned it yet:
    how a pool finds the failures of tasks nobody awaited. *)
