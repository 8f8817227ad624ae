(* A simulated scheduler with the same suspension and cancellation protocol
   as Braid.Scheduler, for model checking. Each simulated fiber starts on a
   dscheck thread; a resumed fiber waits in [ready] until some thread drains
   it, as it would wait in a real scheduler's run queue. *)

exception Cancelled

type fiber = {
  id : int;
  cancelled : bool Atomic.t;
  waker : (unit -> unit) Atomic.t;
}

type _ Effect.t +=
  | Suspend : ((('a, exn) result -> bool) -> 'a option) -> 'a Effect.t
  | Self : fiber Effect.t

let suspend block = Effect.perform (Suspend block)
let self_id () = (Effect.perform Self).id
let protect f = f ()

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
  if Atomic.get fiber.cancelled then Effect.Deep.discontinue k Cancelled
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
          if Atomic.get fiber.cancelled then ignore (resumer (Error Cancelled))
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

(* Runs [f] as a new fiber on the calling dscheck thread until it finishes
   or blocks. *)
let start f =
  incr next_id;
  let fiber =
    { id = !next_id; cancelled = Atomic.make false; waker = Atomic.make ignore }
  in
  let sim = { fiber; outcome = None } in
  handle fiber (fun () ->
      sim.outcome <- Some (match f () with v -> Ok v | exception e -> Error e));
  sim

let cancel sim =
  Atomic.set sim.fiber.cancelled true;
  (Atomic.get sim.fiber.waker) ()

let drain () =
  while not (Queue.is_empty ready) do
    (Queue.pop ready) ()
  done
