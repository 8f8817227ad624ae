open Braid
module Incoming = Saturn.Single_consumer_queue

module Owner = struct
  type t = { fiber : Fiber.t; mutable busy : bool }

  let create () = { fiber = Private.Fiber.create (); busy = false }
end

type t = {
  lwt_thread : Thread.t;
  local : Private.Task_queue.t;  (** Lwt's thread only. *)
  mutable draining : bool;  (** Lwt's thread only. *)
  mutable pause_pending : bool;  (** Lwt's thread only. *)
  mutable maybe_in_fiber : bool;
      (** Lwt's thread only. False while no bridge fiber can be running: Lwt
          code calling {!run} then is not in one, and its context is its
          thread's, found without the effect that would tell (an unhandled
          effect costs an exception). True while a task runs, but for
          {!deliver}'s (a fiber calling [Lwt.wakeup] runs Lwt code inside it).
      *)
  incoming : (unit -> unit) Incoming.t;  (** From other threads. *)
  notified : bool Atomic.t;  (** A notification is on its way. *)
  notification : int;
  ops : Private.Scheduler.ops;
}

let on_lwt_thread t = Thread.self () == t.lwt_thread

(* A drain runs at most this many tasks before letting Lwt's loop turn, so a
   fiber that keeps yielding cannot starve Lwt threads. *)
let budget = 1024

(* Runs at most [n] tasks; returns how many more it could have run ([0]:
   some may be left, and a turn of Lwt's loop is due first). *)
let rec run_some t n =
  t.draining <- true;
  match drain t n with
  | left ->
      t.maybe_in_fiber <- false;
      t.draining <- false;
      left
  | exception e ->
      t.maybe_in_fiber <- false;
      t.draining <- false;
      raise e

and run_tasks t = if run_some t budget = 0 then continue_after_pause t

and drain t n =
  if n = 0 then 0
  else if not (Private.Task_queue.is_empty t.local) then (
    let task = Private.Task_queue.pop t.local in
    t.maybe_in_fiber <- true;
    task ();
    drain t (n - 1))
  else
    match Incoming.pop_opt t.incoming with
    | Some task ->
        t.maybe_in_fiber <- true;
        task ();
        drain t (n - 1)
    | None -> n

and continue_after_pause t =
  if not t.pause_pending then (
    t.pause_pending <- true;
    Lwt.on_success (Lwt.pause ()) (fun () ->
        t.pause_pending <- false;
        if not t.draining then run_tasks t))

(* Cross-thread wake-ups coalesce: one notification is in flight at most, and
   the handler clears the flag before draining, so a push it misses sends a new
   one. *)
let post t task =
  Incoming.push t.incoming task;
  if not (Atomic.get t.notified || Atomic.exchange t.notified true) then
    Lwt_unix.send_notification t.notification

let on_notification t () =
  Atomic.set t.notified false;
  if not t.draining then run_tasks t

(* On Lwt's thread outside a drain (Lwt code filling a promise a bridge fiber
   awaits, say) the task runs at once, as [Lwt.wakeup] would run callbacks. *)
let enqueue_here t task =
  Private.Task_queue.push t.local task;
  if not t.draining then run_tasks t

let enqueue t task =
  if on_lwt_thread t then enqueue_here t task else post t task

(* A forked fiber's failure that nobody has joined by the time the tasks it
   woke have run goes where Lwt sends the failures of [Lwt.async]. *)
let report_unjoined fiber () =
  match Private.Fiber.unobserved_failure fiber with
  | Some (e, _) -> !Lwt.async_exception_hook e
  | None -> ()

let spawn t fiber body =
  enqueue_here t (fun () ->
      Private.Scheduler.run_fiber t.ops fiber (fun () ->
          body ();
          if Option.is_some (Private.Fiber.unobserved_failure fiber) then
            enqueue_here t (report_unjoined fiber)))

let create () =
  let notification = Lwt_unix.make_notification ignore in
  let rec t =
    {
      lwt_thread = Thread.self ();
      local = Private.Task_queue.create ();
      draining = false;
      pause_pending = false;
      maybe_in_fiber = false;
      incoming = Incoming.create ();
      notified = Atomic.make false;
      notification;
      ops =
        {
          Private.Scheduler.enqueue = (fun task -> enqueue t task);
          spawn = (fun fiber body -> spawn t fiber body);
        };
    }
  in
  Lwt_unix.set_notification notification (on_notification t);
  t

let check_thread t what =
  if not (on_lwt_thread t) then
    invalid_arg (what ^ ": not called from the thread that created the bridge")

let claim what = function
  | None -> Private.Fiber.create ()
  | Some (o : Owner.t) ->
      if o.busy then
        invalid_arg (what ^ ": the owner is already running another operation");
      o.busy <- true;
      o.fiber

let release_owner = function
  | None -> ()
  | Some (o : Owner.t) -> o.busy <- false

(* One operation: a fiber running [f] whose outcome resolves a promise. *)
(* Who hears of the outcome, see [cancellable]. *)
type 'a waiter =
  | Nobody  (** Not waited for yet, or between a cancellation and its catch. *)
  | Trigger of 'a Lwt.u
  | After_cancel of 'a Lwt.u

type 'a op = {
  owner : Owner.t option;
  mutable outcome : ('a, exn) result option;  (** Once delivered. *)
  mutable waiter : 'a waiter;
  mutable scope : Fiber.Scope.t option;  (** While [f] runs. *)
  mutable cancel_requested : bool;
}

let deliver t op result () =
  t.maybe_in_fiber <- false;
  release_owner op.owner;
  op.outcome <- Some result;
  match op.waiter with
  | Nobody -> ()
  | Trigger u | After_cancel u ->
      op.waiter <- Nobody;
      Lwt.wakeup_later_result u result

let request_cancel op () =
  (match op.waiter with
  | Trigger _ -> op.waiter <- Nobody (* Rejected by the cancellation. *)
  | Nobody | After_cancel _ -> ());
  if not op.cancel_requested then (
    op.cancel_requested <- true;
    Option.iter Fiber.Scope.cancel op.scope)

let body t fiber op context f () =
  let result =
    match
      Private.Fiber.run_scope_in fiber (fun scope ->
          op.scope <- Some scope;
          if op.cancel_requested then Fiber.Scope.cancel scope;
          Private.Fiber.run_in_context context f)
    with
    | v -> Ok v
    | exception Cancelled when op.cancel_requested -> Error Lwt.Canceled
    | exception e -> Error e
  in
  op.scope <- None;
  (* Resolve from the drain, not from inside this fiber's handler, so Lwt
     callbacks never run as part of the fiber. *)
  enqueue_here t (deliver t op result)

(* [Lwt.cancel] rejects a task at once, but an operation whose resumer has
   already fired must still deliver its value. So the promise returned is a
   [catch] over a task that the outcome resolves: cancelling it cancels the
   fiber, and the promise then follows the outcome, [Canceled] if the
   structure withdrew the waiter, the value otherwise. The promise for that
   is made only then: an operation that is not cancelled makes two promises,
   the task and the catch's. *)
let after_cancel op _ =
  match op.outcome with
  | Some r -> Lwt.of_result r
  | None ->
      let p, u = Lwt.wait () in
      op.waiter <- After_cancel u;
      p

let cancellable op =
  let trigger, resolve_trigger = Lwt.task () in
  op.waiter <- Trigger resolve_trigger;
  Lwt.on_cancel trigger (request_cancel op);
  Lwt.catch (fun () -> trigger) (after_cancel op)

(* Lwt code is outside any fiber unless a bridge fiber runs it (see
   [maybe_in_fiber]); Lwt's thread runs no other scheduler's fibers. *)
let caller_context t =
  if t.maybe_in_fiber then Fiber.context () else Private.Fiber.thread_context ()

let run ?owner t f =
  check_thread t "Braid_lwt.run";
  let fiber = claim "Braid_lwt.run" owner in
  let op =
    {
      owner;
      outcome = None;
      waiter = Nobody;
      scope = None;
      cancel_requested = false;
    }
  in
  (* The operation runs in the context of the Lwt code that asked for it. *)
  let context = caller_context t in
  Private.Fiber.set_context fiber context;
  enqueue_here t (fun () ->
      Private.Scheduler.run_fiber t.ops fiber (body t fiber op context f));
  match op.outcome with Some r -> Lwt.of_result r | None -> cancellable op

let run_now ~owner t f =
  check_thread t "Braid_lwt";
  let fiber = claim "Braid_lwt" (Some owner) in
  let was_draining = t.draining in
  let result = ref None in
  let context = caller_context t in
  t.draining <- true;
  let was_in_fiber = t.maybe_in_fiber in
  t.maybe_in_fiber <- true;
  Private.Fiber.set_context fiber context;
  Private.Scheduler.run_fiber t.ops fiber (fun () ->
      result :=
        Some
          (match Private.Fiber.run_in_context context f with
          | v -> Ok v
          | exception e -> Error e));
  t.draining <- was_draining;
  t.maybe_in_fiber <- was_in_fiber;
  owner.busy <- false;
  if not was_draining then run_tasks t;
  match !result with
  | Some (Ok v) -> v
  | Some (Error e) -> raise e
  | None -> invalid_arg "Braid_lwt: a non-blocking operation blocked"

let wait_for p resume =
  Lwt.on_any p
    (fun v -> ignore (resume (Ok v)))
    (fun e -> ignore (resume (Error e)))

let await_lwt t p =
  if on_lwt_thread t then (
    if Fiber.self_id () < 0 then
      invalid_arg
        "Braid_lwt.await_lwt: called by Lwt code, outside a Braid fiber: it \
         would block Lwt's thread for ever (use Lwt.bind)";
    match Lwt.state p with
    | Return v -> v
    | Fail e -> raise e
    | Sleep ->
        suspend (fun resume ->
            wait_for p resume;
            None))
  else
    suspend (fun resume ->
        post t (fun () -> wait_for p resume);
        None)
