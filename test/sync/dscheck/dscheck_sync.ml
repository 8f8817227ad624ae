(* Every interleaving of small scenarios on Promise, Mvar and Mutex, with
   and without cancellation. Blocked fibers continue when some thread drains
   the ready queue, as in a real scheduler; the final checks are the
   structures' promises: no lost value, no lost wake-up, no leaked waiter, no
   lock held by a cancelled waiter. *)

let spawn f =
  Atomic.spawn (fun () ->
      f ();
      Contract.drain ())

let started f =
  let cell = ref None in
  spawn (fun () -> cell := Some (Contract.start f));
  cell

let outcome cell =
  match !cell with Some { Contract.outcome; _ } -> outcome | None -> None

let is_cancelled = function
  | Some (Error Contract.Cancelled) -> true
  | _ -> false

let run name scenario =
  Atomic.trace (fun () ->
      Contract.reset ();
      scenario ());
  Printf.printf "%s: every interleaving checked\n%!" name

(* Promise: both waiters see the value, whenever they arrive. *)
let promise_fill () =
  let p = Promise.create () in
  spawn (fun () -> ignore (Contract.start (fun () -> Promise.fill p 1)));
  let a = started (fun () -> Promise.await p) in
  let b = started (fun () -> Promise.await p) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          outcome a = Some (Ok 1) && outcome b = Some (Ok 1)))

(* Promise: a cancelled waiter leaves no trace behind. *)
let promise_cancel () =
  let p = Promise.create () in
  let a = started (fun () -> Promise.await p) in
  spawn (fun () -> Option.iter Contract.cancel !a);
  spawn (fun () -> ignore (Contract.start (fun () -> Promise.fill p 1)));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          (outcome a = Some (Ok 1) || is_cancelled (outcome a))
          && match Promise.peek p with Some (Ok 1) -> true | _ -> false))

(* Mvar: two puts, two takes on three threads: each value taken once, in
   order, and nobody left blocked. *)
let mvar_handoff () =
  let m = Mvar.create_empty () in
  let putter =
    started (fun () ->
        Mvar.put m 1;
        Mvar.put m 2)
  in
  let a = started (fun () -> Mvar.take m) in
  let b = started (fun () -> Mvar.take m) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          let taken = List.sort compare [ outcome a; outcome b ] in
          outcome putter = Some (Ok ())
          && taken = [ Some (Ok 1); Some (Ok 2) ]
          && Mvar.is_empty m))

(* Mvar: a taker cancelled at any point either got the value or left it in
   the box; a second taker then takes it. *)
let mvar_cancel_taker () =
  let m = Mvar.create_empty () in
  let a = started (fun () -> Mvar.take m) in
  spawn (fun () -> Option.iter Contract.cancel !a);
  spawn (fun () -> ignore (Contract.start (fun () -> Mvar.put m 7)));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          match outcome a with
          | Some (Ok 7) -> Mvar.is_empty m
          | Some (Error Contract.Cancelled) -> Mvar.try_take m = Some 7
          | _ -> false))

(* Mvar: a putter cancelled at any point either put its value (and returned
   normally) or did not (and raised); nothing is duplicated or lost. *)
let mvar_cancel_putter () =
  let m = Mvar.create 0 in
  let p = started (fun () -> Mvar.put m 1) in
  spawn (fun () -> Option.iter Contract.cancel !p);
  let t = started (fun () -> Mvar.take m) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          let rest = Mvar.try_take m in
          outcome t = Some (Ok 0)
          &&
          match outcome p with
          | Some (Ok ()) -> rest = Some 1
          | Some (Error Contract.Cancelled) -> rest = None
          | _ -> false))

(* Mutex: three fibers each take and release the lock; the lock ends free
   and each held it once. *)
let mutex_exclusion () =
  let m = Mutex.create () in
  let inside = Atomic.make 0 and overlaps = Atomic.make 0 in
  let critical () =
    Mutex.lock m;
    if Atomic.fetch_and_add inside 1 <> 0 then Atomic.incr overlaps;
    Atomic.decr inside;
    Mutex.unlock m
  in
  let a = started critical and b = started critical and c = started critical in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          List.for_all (fun o -> outcome o = Some (Ok ())) [ a; b; c ]
          && Atomic.get overlaps = 0
          && not (Mutex.is_locked m)))

(* The thesis's scenario, every interleaving: an owner releases while a
   waiter is cancelled; the lock must end free, never stuck with the
   cancelled waiter. *)
let mutex_cancel_waiter () =
  let m = Mutex.create () in
  let owner_sim = ref None in
  let waiter =
    started (fun () ->
        Mutex.lock m;
        Mutex.unlock m)
  in
  spawn (fun () ->
      owner_sim :=
        Some
          (Contract.start (fun () ->
               Mutex.lock m;
               Mutex.unlock m)));
  spawn (fun () -> Option.iter Contract.cancel !waiter);
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          outcome owner_sim = Some (Ok ())
          && (outcome waiter = Some (Ok ()) || is_cancelled (outcome waiter))
          && not (Mutex.is_locked m)))

let () =
  run "promise fill" promise_fill;
  run "promise cancel" promise_cancel;
  run "mvar handoff" mvar_handoff;
  run "mvar cancel taker" mvar_cancel_taker;
  run "mvar cancel putter" mvar_cancel_putter;
  run "mutex exclusion" mutex_exclusion;
  run "mutex cancel waiter" mutex_cancel_waiter
