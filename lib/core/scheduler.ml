open Effect.Deep
open Suspend
module Probe = Braid_trace.Probe

type ops = {
  enqueue : (unit -> unit) -> unit;
  spawn : Fiber.t -> (unit -> unit) -> unit;
}

let resume k = function Ok v -> continue k v | Error e -> discontinue k e

(* Traced, a resumption says which fiber runs again; untraced, the closure
   is the same as ever (the fiber is not captured). *)
let resumption fiber k result =
  if Probe.enabled () then (fun () ->
    Probe.fiber_running (Fiber.Private.id fiber);
    resume k result)
  else fun () -> resume k result

(* The suspension is traced before [block] runs: once [block] has published
   the resumer, the fiber may run again on another domain at once, and its
   resumption must not precede its suspension in the trace. *)
let suspend_fiber ops fiber block k =
  if Fiber.Private.is_cancelled_fiber fiber then discontinue k Cancelled
  else
    let resumed = Atomic.make false in
    let resumer result =
      Atomic.compare_and_set resumed false true
      &&
      (ops.enqueue (resumption fiber k result);
       true)
    in
    Probe.fiber_suspended (Fiber.Private.id fiber);
    match block resumer with
    | Some v ->
        Probe.fiber_running (Fiber.Private.id fiber);
        continue k v
    | exception e ->
        Probe.fiber_running (Fiber.Private.id fiber);
        discontinue k e
    | None ->
        (* Publish the waker only now: before [block] returned None nothing
           could be waiting, and an early [Some v] must never race with a
           cancellation. Then re-check, in case [Fiber.cancel] ran before the
           waker was visible (each side writes, then reads the other's). *)
        Fiber.Private.set_waker fiber resumer;
        Fiber.Private.wake_if_cancelled fiber

let run_fiber ops fiber body =
  Probe.fiber_running (Fiber.Private.id fiber);
  try_with body ()
    {
      effc =
        (fun (type a) (e : a Effect.t) ->
          match e with
          | Suspend block ->
              Some
                (fun (k : (a, unit) continuation) ->
                  suspend_fiber ops fiber block k)
          | Fiber.Private.Fork (child, child_body) ->
              Some
                (fun (k : (a, unit) continuation) ->
                  Fiber.Private.inherit_context ~parent:fiber child;
                  Probe.fiber_created ~child:(Fiber.Private.id child)
                    ~parent:(Fiber.Private.id fiber);
                  ops.spawn child child_body;
                  continue k ())
          | Fiber.Private.Current ->
              Some (fun (k : (a, unit) continuation) -> continue k fiber)
          | _ -> None);
    }

type tally = { mutable live : int; mutable failed : Fiber.t list }

let tally () = { live = 0; failed = [] }
let live t = t.live

let track t ops fiber body =
  t.live <- t.live + 1;
  fun () ->
    run_fiber ops fiber (fun () ->
        body ();
        t.live <- t.live - 1;
        if Option.is_some (Fiber.Private.unobserved_failure fiber) then
          t.failed <- fiber :: t.failed)

let single_threaded t runnable ~enqueue =
  let rec ops =
    {
      enqueue;
      spawn =
        (fun fiber body -> Task_queue.push runnable (track t ops fiber body));
    }
  in
  ops

let result t ~main handle =
  Fiber.Private.result_of_run ~main handle ~failed:t.failed
