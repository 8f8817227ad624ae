(* A simulated scheduler with the same suspension and cancellation protocol
   as Braid.Scheduler, for model checking. Each simulated fiber starts on a
   dscheck thread; a resumed fiber waits in [ready] until some thread drains
   it, as it would wait in a real scheduler's run queue. *)

exception Cancelled

type fiber = {
  id : int;
  cancelled : bool Atomic.t;
  waker : (unit -> unit) Atomic.t;
  mutable shields : int;  (** Nesting depth of [protect]. *)
}

type _ Effect.t +=
  | Suspend : ((('a, exn) result -> bool) -> 'a option) -> 'a Effect.t
  | Self : fiber Effect.t

let suspend block = Effect.perform (Suspend block)
let self_id () = (Effect.perform Self).id

(* As in Braid.Fiber: inside [protect] the fiber is not cancelled; a
   cancellation takes effect at its next suspension outside. *)
let is_cancelled fiber =
  let cancelled = Atomic.get fiber.cancelled in
  cancelled && fiber.shields = 0

let protect f =
  let fiber = Effect.perform Self in
  fiber.shields <- fiber.shields + 1;
  Fun.protect ~finally:(fun () -> fiber.shields <- fiber.shields - 1) f

(* The model runs on one real thread: plain state is safe here. *)
let ready : (unit -> unit) Queue.t = Queue.create ()
let next_id = ref 0

let reset () =
  Queue.clear ready;
  next_id := 0

let resume k = function
  | Ok v -> Effect.Deep.continue k v
  | Error e -> Effect.Deep.discontinue k e

let suspend_fiber fiber block k =
  if is_cancelled fiber then Effect.Deep.discontinue k Cancelled
  else
    let resumed = Atomic.make false in
    let resumer r =
      Atomic.compare_and_set resumed false true
      &&
      (Queue.push (fun () -> resume k r) ready;
       true)
    in
    match block resumer with
    | Some v -> Effect.Deep.continue k v
    | exception e -> Effect.Deep.discontinue k e
    | None ->
        let wake () =
          if is_cancelled fiber then ignore (resumer (Error Cancelled))
        in
        Atomic.set fiber.waker wake;
        wake ()

let handle fiber f =
  Effect.Deep.try_with f ()
    {
      effc =
        (fun (type a) (e : a Effect.t) ->
          match e with
          | Suspend block ->
              Some
                (fun (k : (a, unit) Effect.Deep.continuation) ->
                  suspend_fiber fiber block k)
          | Self ->
              Some
                (fun (k : (a, unit) Effect.Deep.continuation) ->
                  Effect.Deep.continue k fiber)
          | _ -> None);
    }

type 'a sim = { fiber : fiber; mutable outcome : ('a, exn) result option }

(* A fiber not started yet: it can already be cancelled, as a real fiber
   can be before its first run. *)
let create () =
  incr next_id;
  let fiber =
    {
      id = !next_id;
      cancelled = Atomic.make false;
      waker = Atomic.make ignore;
      shields = 0;
    }
  in
  { fiber; outcome = None }

(* Runs [f] as [sim]'s fiber on the calling dscheck thread until it
   finishes or blocks. *)
let run sim f =
  handle sim.fiber (fun () ->
      sim.outcome <- Some (match f () with v -> Ok v | exception e -> Error e))

let start f =
  let sim = create () in
  run sim f;
  sim

let cancel sim =
  Atomic.set sim.fiber.cancelled true;
  (Atomic.get sim.fiber.waker) ()

let drain () =
  while not (Queue.is_empty ready) do
    (Queue.pop ready) ()
  done
