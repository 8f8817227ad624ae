(** Fibers: lightweight threads run by any Braid scheduler.

    {!fork}, {!yield} and {!join} work under every Braid scheduler (FIFO, pool,
    IO event loop) because they only use effects those schedulers share.
    Cancellation is cooperative: a cancelled fiber raises {!Braid.Cancelled} at
    its next (or current) blocking call, never in the middle of computing. *)

type t
(** A running fiber. *)

type 'a handle
(** A forked fiber whose result can be joined. *)

exception Multiple of (exn * Printexc.raw_backtrace) list
(** Several fibers failed and none of them was joined; raised by scheduler [run]
    functions instead of picking one. In order of failure, each with the
    backtrace of where it was raised. Printed by [Printexc.to_string] as
    [Braid.Fiber.Multiple [e1; e2]]. *)

val fork : (unit -> 'a) -> 'a handle
(** [fork f] starts [f] in a new fiber of the calling fiber's scheduler and
    returns at once. The new fiber is not tied to its parent: cancelling the
    parent does not cancel it (use {!Switch} for that). If [f] raises and the
    fiber is never {!join}ed, the scheduler's [run] re-raises the exception.

    Raises [Invalid_argument] outside a Braid scheduler. *)

val yield : unit -> unit
(** [yield ()] lets the other runnable fibers of the scheduler run first.
    @raise Braid.Cancelled if the fiber is cancelled. *)

val join : 'a handle -> 'a
(** [join h] waits for [h] to finish, blocking only the calling fiber (or
    thread), and returns its result or raises its exception ([Cancelled] if it
    ended by cancellation). Joining observes a failure: the scheduler will not
    re-raise it. May be called from any domain or thread. *)

val cancel : 'a handle -> unit
(** [cancel h] cancels [h]'s fiber from any domain or thread. If it is blocked,
    it is woken at once and its blocking call raises {!Braid.Cancelled};
    otherwise the next blocking call does. Protected sections ({!protect}) are
    not interrupted. Cancelling a finished fiber does nothing. *)

val is_done : 'a handle -> bool
(** [is_done h] is true once [h]'s fiber has returned or raised. *)

val check : unit -> unit
(** [check ()] raises {!Braid.Cancelled} if the calling fiber is cancelled: a
    cancellation point for long computations. No-op outside a fiber. *)

val is_cancelled : unit -> bool
(** [is_cancelled ()] is true if the calling fiber has been cancelled (and is
    not inside {!protect}). [false] outside a fiber. *)

val protect : (unit -> 'a) -> 'a
(** [protect f] runs [f] shielded from cancellation: blocking calls inside [f]
    cannot be interrupted by a cancellation requested outside it. Use it to
    release resources while unwinding. Pending cancellation is seen after. *)

val self_id : unit -> int
(** [self_id ()] identifies the caller for ownership checks: the current fiber
    under a Braid scheduler (stable across domains if the fiber migrates), or
    the current systhread otherwise. Fiber and thread ids never collide. *)

(** {2 Context: values and handlers that follow forks}

    Each fiber has a context: values bound to keys, and effect handlers to
    re-install around its body. A fiber inherits its parent's context when it is
    forked ({!fork}, {!Switch.fork}, on every Braid scheduler: FIFO, IO loop,
    pool, Lwt bridge), and so does a [Braid_pool] task from whoever submitted
    it, on whatever domain it runs. A bare domain or systhread has a context too
    (kept per thread), which the fibers and pool tasks it starts inherit. What a
    context holds is immutable; a change made by a fiber after a fork is not
    seen by the child, and a child's changes never reach its parent.

    A systhread started with [Thread.create] (or a domain with [Domain.spawn])
    starts with an empty context, as Braid cannot see it being created: pass it
    {!val-context} and enter it with {!with_context}.

    This is Eio's [Fiber.with_binding] and Picos' [FLS] with inheritance, plus
    inherited handlers: an effect handler installed with {!with_handler} is in
    force in every fiber forked below it, as if each fiber's stack continued its
    parent's. *)

type 'a key = 'a Context.key
(** A key for a value of type ['a]. *)

val create_key : ?name:string -> unit -> 'a key
(** [create_key ()] is a new key. Make keys once, at module initialisation. *)

val get : 'a key -> 'a option
(** [get key] is the value bound to [key] in the caller's context (the calling
    fiber's, or the calling thread's outside a fiber). Never blocks. *)

val with_binding : 'a key -> 'a -> (unit -> 'b) -> 'b
(** [with_binding key v f] runs [f ()] with [key] bound to [v], in the calling
    fiber and every fiber forked (or pool task submitted) inside [f], then
    restores the previous binding, whether [f] returns or raises. *)

val without_binding : 'a key -> (unit -> 'b) -> 'b
(** [without_binding key f] runs [f ()] with [key] unbound. *)

type handler = Context.handler = { run : 'a. (unit -> 'a) -> 'a }
(** An effect handler as a function: [run f] installs the handler around [f ()].
    See {!with_handler}. *)

val with_handler : handler -> (unit -> 'a) -> 'a
(** [with_handler h f] is [h.run f], and re-installs [h] (with [h.run]) around
    the body of every fiber forked and every pool task submitted inside [f], and
    below them: effects those perform reach [h] as if they were performed by
    [f]. A copy of the handler then runs in each such fiber, possibly on another
    domain (pool tasks): whatever it answers with must be safe there. Handlers
    keep their order: the first installed is outermost. *)

type context = Context.t

val context : unit -> context
(** [context ()] is the caller's context, to hand to {!with_context} elsewhere
    (a systhread of your own, a callback run by foreign code). *)

val with_context : context -> (unit -> 'a) -> 'a
(** [with_context c f] runs [f ()] with [c] as the caller's context and inside
    every inherited handler of [c], then restores the caller's own. *)

(** {2 Cancellation scopes}

    A scope covers a part of one fiber's execution; cancelling it interrupts
    that part only. {!Switch} and timeouts are built on scopes. *)

module Scope : sig
  type fiber := t
  type t

  val run : (t -> 'a) -> 'a
  (** [run f] calls [f scope] with a new scope nested in the caller's current
      one. Cancelling [scope] (from any domain) interrupts only blocking calls
      made inside [f]. Outside a fiber, the scope can never interrupt anything.
  *)

  val cancel : t -> unit
  (** [cancel scope] cancels it; idempotent, callable from anywhere. *)

  val is_cancelled : t -> bool
  (** [is_cancelled scope] is true once [scope] itself was cancelled. *)

  val owner : t -> fiber option
  (** The fiber the scope belongs to, [None] outside a fiber. *)
end

(** {2 For scheduler implementors}

    Exposed as [Braid.Private.Fiber]: what a scheduler needs to run fibers.
    Braid schedulers handle these effects with
    {!Braid.Private.Scheduler.run_fiber}. *)

module Private : sig
  type cancellation
  (** A fiber's cancellation as another fiber can inherit it: its scopes as they
      are now, up to its innermost {!Braid.Fiber.protect}. *)

  val create : ?cancelled_with:cancellation -> unit -> t
  (** [create ()] makes a fiber that has not started. With [cancelled_with], the
      fiber also counts as cancelled whenever those scopes are (now or later):
      its blocking calls raise {!Braid.Cancelled} once they are. It is not woken
      by them while blocked; it sees them at its next blocking call (or
      {!Braid.Fiber.check}). *)

  val current : unit -> t option
  (** The calling fiber, [None] outside one. *)

  val run_scope_in : t -> (Scope.t -> 'a) -> 'a
  (** [run_scope_in fiber f] is [Fiber.Scope.run f] for a caller that knows it
      runs as [fiber] ({!current}, looked up once): it performs no effect to
      find it. A loop that serves many short tasks in one fiber saves an effect
      per task. [fiber] must be the calling fiber: a scope of another fiber
      would wake that one when cancelled. *)

  val with_binding_in : t -> 'a key -> 'a -> (unit -> 'b) -> 'b
  (** [with_binding_in fiber key v f] is {!Braid.Fiber.with_binding}[ key v f]
      for a caller that knows it runs as [fiber] ({!current}, looked up once):
      it performs no effect to find it. The server binds each request's id so,
      on the connection's fiber. [fiber] must be the calling fiber: the binding
      would otherwise be another fiber's, seen by it and not by the caller. *)

  val submitter : unit -> t option * context
  (** [submitter ()] is the calling fiber (if any) and the caller's context:
      what a scheduler starting work on the caller's behalf inherits. One
      effect. *)

  val thread_context : unit -> context
  (** [thread_context ()] is the calling systhread's own context, what
      {!Braid.Fiber.val-context} is outside a fiber, without the effect that
      finds out whether the caller is in one: for a scheduler that knows its
      caller is not. *)

  val cancellation_of : t option -> cancellation
  (** [cancellation_of (Some f)] is [f]'s cancellation now; of [None], none. *)

  val prepare :
    ?on_failure:(exn -> Printexc.raw_backtrace -> unit) ->
    ?on_exit:(t -> unit) ->
    (unit -> 'a) ->
    t * 'a handle * (unit -> unit)
  (** [prepare f] is [(fiber, handle, body)]: running [body] inside [fiber] runs
      [f] and records its outcome in [handle]. A failure (any exception but
      [Cancelled] after the fiber was cancelled) goes to [on_failure], which by
      default keeps it for {!unobserved_failure} until the handle is joined.
      Once the outcome is recorded (and joiners woken), [body] calls
      [on_exit fiber]. Both hooks are kept as long as the fiber runs: pass
      values made once for many fibers rather than closures made for each. *)

  val start : t -> (unit -> unit) -> unit
  (** [start fiber body] asks the current scheduler to run a prepared fiber.

      Raises [Invalid_argument] outside a Braid scheduler. *)

  val outcome : 'a handle -> ('a, exn * Printexc.raw_backtrace) result option
  (** [outcome h] is [h]'s result once done, without observing a failure. *)

  val unobserved_failure : t -> (exn * Printexc.raw_backtrace) option
  (** The failure of a finished fiber if it was never joined. *)

  val result_of_run : main:t -> 'a handle -> failed:t list -> 'a
  (** [result_of_run ~main handle ~failed] is what a scheduler's [run] returns
      once every fiber is done: [main]'s value ([handle] is its handle), unless
      a fiber failed unobserved. [failed] lists the fibers that failed, most
      recent first. One failure is re-raised with its backtrace; several raise
      {!Braid.Fiber.Multiple}, in order of failure.

      Raises [Invalid_argument] if [main] is not finished. *)

  val is_cancelled_fiber : t -> bool
  (** [is_cancelled_fiber f] is [f]'s cancellation state as seen by its blocking
      calls (scopes up to the innermost {!Braid.Fiber.protect}). *)

  val run_in_context : context -> (unit -> 'a) -> 'a
  (** [run_in_context c f] runs [f ()] inside the inherited handlers of [c],
      without changing the caller's context: what a fiber started with [c] must
      run its body in (a body made by {!prepare} does it itself). *)

  val set_context : t -> context -> unit
  (** [set_context fiber c] gives a fiber not yet started the context [c]: its
      body (as {!prepare} makes it) runs inside [c]'s handlers. A scheduler that
      starts a fiber on its own (a main fiber, a pool task) passes the context
      of whoever asked ({!Braid.Fiber.val-context}). *)

  val inherit_context : parent:t -> t -> unit
  (** [inherit_context ~parent child] is [set_context child] with [parent]'s
      current context: what every scheduler does on {!Fork}. *)

  val set_waker : t -> 'a Suspend.resumer -> unit
  (** [set_waker f resume] registers how to wake [f] when it gets cancelled
      while suspended: [resume (Error Cancelled)]. The scheduler sets it to the
      resumer of each suspension once the suspension is published, then calls
      {!wake_if_cancelled}. Allocates nothing. *)

  val wake_if_cancelled : t -> unit
  (** [wake_if_cancelled f] calls [f]'s registered resumer with
      [Error Cancelled] if [f] is cancelled (a cancellation hidden by a shield
      does not count). Callable from any domain. *)

  val cancel : t -> unit
  (** [cancel f] is {!Braid.Fiber.cancel} for a fiber rather than a handle. *)

  val id : t -> int

  type _ Effect.t +=
    | Fork : t * (unit -> unit) -> unit Effect.t
          (** Start a new fiber running [body]; the handler must run it
              eventually on its scheduler. *)
    | Current : t Effect.t  (** The fiber performing the effect. *)
end
