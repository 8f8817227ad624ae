open Effect.Deep
open Suspend

type ops = {
  enqueue : (unit -> unit) -> unit;
  spawn : Fiber.t -> (unit -> unit) -> unit;
}

let resume k = function Ok v -> continue k v | Error e -> discontinue k e

let suspend_fiber ops fiber block k =
  if Fiber.Private.is_cancelled_fiber fiber then discontinue k Cancelled
  else
    let resumed = Atomic.make false in
    let resumer result =
      Atomic.compare_and_set resumed false true
      &&
      (ops.enqueue (fun () -> resume k result);
       true)
    in
    match block resumer with
    | Some v -> continue k v
    | exception e -> discontinue k e
    | None ->
        (* Publish the waker only now: before [block] returned None nothing
           could be waiting, and an early [Some v] must never race with a
           cancellation. Then re-check, in case [Fiber.cancel] ran before the
           waker was visible (each side writes, then reads the other's). *)
        let wake_if_cancelled () =
          if Fiber.Private.is_cancelled_fiber fiber then
            ignore (resumer (Error Cancelled))
        in
        Fiber.Private.set_waker fiber wake_if_cancelled;
        wake_if_cancelled ()

let run_fiber ops fiber body =
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
