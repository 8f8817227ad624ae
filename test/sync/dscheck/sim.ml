(* A scheduler for model checking, built like Braid's own on the real
   Scheduler.run_fiber, so the suspension and cancellation handshake that is
   checked is lib/core's. Each simulated fiber starts on a dscheck thread; a
   resumed fiber waits in [ready] until some thread drains it, as it would
   wait in a real scheduler's run queue. *)

(* The model runs on one real thread: plain state is safe here. *)
let ready : (unit -> unit) Queue.t = Queue.create ()
let reset () = Queue.clear ready

let rec ops =
  {
    Scheduler.enqueue = (fun task -> Queue.push task ready);
    spawn =
      (fun fiber body ->
        Queue.push (fun () -> Scheduler.run_fiber ops fiber body) ready);
  }

type 'a t = { fiber : Fiber.t; handle : 'a Fiber.handle; body : unit -> unit }

(* A fiber not started yet: it can already be cancelled, as a real fiber
   can be before its first run. *)
let create f =
  let fiber, handle, body = Fiber.Private.prepare f in
  { fiber; handle; body }

(* Runs the fiber on the calling dscheck thread until it finishes or
   blocks. *)
let run t = Scheduler.run_fiber ops t.fiber t.body

let start f =
  let t = create f in
  run t;
  t

let outcome t =
  Option.map (Result.map_error fst) (Fiber.Private.outcome t.handle)

let cancel t = Fiber.cancel t.handle

let drain () =
  while not (Queue.is_empty ready) do
    (Queue.pop ready) ()
  done
