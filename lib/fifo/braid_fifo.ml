open Braid
module Incoming = Saturn.Single_consumer_queue
module Wake_up = Private.Wake_up

type t = {
  runnable : Private.Task_queue.t;  (** Touched only by [owner]. *)
  owner : Thread.t;  (** The systhread running [run]. *)
  incoming : (unit -> unit) Incoming.t;  (** Resumptions from anywhere. *)
  sleeping : Wake_up.flag;
  monitor : Wake_up.Monitor.t;  (** What [owner] sleeps on. *)
  fibers : Private.Scheduler.tally;
}

let has_incoming t = not (Incoming.is_empty t.incoming)

module Wake = Wake_up.Make (struct
  type nonrec t = t
  type timeout = unit
  type outcome = unit

  let flag t = t.sleeping
  let has_work = has_incoming
  let block t () = Wake_up.Monitor.wait t.monitor
  let poll _ = ()
  let wake t = Wake_up.Monitor.signal t.monitor
end)

(* Resumers usually run in one of our own fibers (a put waking a taker): the
   local queue needs no atomics. From elsewhere, the queue is the one
   [Wake] watches. *)
let enqueue t task =
  if Thread.self () == t.owner then Private.Task_queue.push t.runnable task
  else (
    Incoming.push t.incoming task;
    Wake.notify t)

(* A resumer on another domain usually answers within microseconds;
   spinning that long avoids a futex sleep and wake-up on each cross-domain
   handoff. *)
let spin_pauses = 4_000

let make_ops t =
  Private.Scheduler.single_threaded t.fibers t.runnable ~enqueue:(enqueue t)

(* Resumptions from other threads join the back of the ring before each
   task runs, so fibers that keep yielding cannot starve them. *)
let rec take_incoming t =
  match Incoming.pop_opt t.incoming with
  | Some task ->
      Private.Task_queue.push t.runnable task;
      take_incoming t
  | None -> ()

let rec schedule t =
  if not (Incoming.is_empty t.incoming) then take_incoming t;
  if not (Private.Task_queue.is_empty t.runnable) then (
    (Private.Task_queue.pop t.runnable) ();
    schedule t)
  else if Private.Scheduler.live t.fibers > 0 then (
    if not (Private.Spin.until ~pauses:spin_pauses has_incoming t) then (
      (* What this domain recorded goes to the trace before it sleeps, as
         the IO loop's and the pool's do: a consumer would otherwise see it
         only when the buffer fills or the domain ends. *)
      Braid_trace.Probe.flush ();
      Wake.sleep t ());
    schedule t)

let run main =
  let t =
    {
      runnable = Private.Task_queue.create ();
      owner = Thread.self ();
      incoming = Incoming.create ();
      sleeping = Wake_up.flag ();
      monitor = Wake_up.Monitor.create ();
      fibers = Private.Scheduler.tally ();
    }
  in
  let fiber, handle, body = Private.Fiber.prepare main in
  Private.Fiber.set_context fiber (Fiber.context ());
  Private.Scheduler.track t.fibers (make_ops t) fiber body ();
  schedule t;
  Private.Scheduler.result t.fibers ~main:fiber handle
