(* Every interleaving of small scenarios on each lib/sync structure, with
   and without cancellation, on lib/core's real suspension and cancellation
   handshake (see sim.ml). Blocked fibers continue when some thread drains
   the ready queue, as in a real scheduler; the final checks are the
   structures' promises: no lost value, no lost wake-up, no leaked waiter, no
   lock held by a cancelled waiter. *)

let spawn f =
  Atomic.spawn (fun () ->
      f ();
      Sim.drain ())

(* The fiber exists before its thread runs, so that a canceller always has
   it to cancel, possibly before it starts. *)
let started f =
  let sim = Sim.create f in
  spawn (fun () -> Sim.run sim);
  sim

let outcome = Sim.outcome

let is_cancelled = function
  | Some (Error Contract.Cancelled) -> true
  | _ -> false

let run name scenario =
  let runs = ref 0 in
  Atomic.trace (fun () ->
      incr runs;
      Sim.reset ();
      scenario ());
  Printf.printf "%s: every interleaving checked (%d runs)\n%!" name !runs

(* lib/core's handshake alone: a cancellation racing with the fiber's
   suspension (before, during or after it publishes its waker) always wakes
   it, and nothing else resumes it. *)
let cancel_wakes () =
  let p = Promise.create () in
  let a = started (fun () -> Promise.await p) in
  spawn (fun () -> Sim.cancel a);
  Atomic.final (fun () ->
      Atomic.check (fun () -> is_cancelled (outcome a) && Promise.peek p = None))

(* Promise: both waiters see the value, whenever they arrive. *)
let promise_fill () =
  let p = Promise.create () in
  spawn (fun () -> ignore (Sim.start (fun () -> Promise.fill p 1)));
  let a = started (fun () -> Promise.await p) in
  let b = started (fun () -> Promise.await p) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          outcome a = Some (Ok 1) && outcome b = Some (Ok 1)))

(* Promise: a cancelled waiter leaves no trace behind. *)
let promise_cancel () =
  let p = Promise.create () in
  let a = started (fun () -> Promise.await p) in
  spawn (fun () -> Sim.cancel a);
  spawn (fun () -> ignore (Sim.start (fun () -> Promise.fill p 1)));
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
  spawn (fun () -> Sim.cancel a);
  spawn (fun () -> ignore (Sim.start (fun () -> Mvar.put m 7)));
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
  spawn (fun () -> Sim.cancel p);
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
  let waiter =
    started (fun () ->
        Mutex.lock m;
        Mutex.unlock m)
  in
  let owner =
    started (fun () ->
        Mutex.lock m;
        Mutex.unlock m)
  in
  spawn (fun () -> Sim.cancel waiter);
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          outcome owner = Some (Ok ())
          && (outcome waiter = Some (Ok ()) || is_cancelled (outcome waiter))
          && not (Mutex.is_locked m)))

(* Semaphore: a waiter cancelled while a permit is released either got the
   permit or left it behind; the permit is never lost. *)
let semaphore_cancel_waiter () =
  let s = Semaphore.make 0 in
  let a = started (fun () -> Semaphore.acquire s) in
  spawn (fun () -> Sim.cancel a);
  spawn (fun () -> Semaphore.release s);
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          match outcome a with
          | Some (Ok ()) -> Semaphore.get_value s = 0
          | Some (Error Contract.Cancelled) -> Semaphore.get_value s = 1
          | _ -> false))

(* Semaphore: two waiters, the first cancelled, one release: if the first
   did not take the permit, the second did, or it is still counted. *)
let semaphore_pass_on () =
  let s = Semaphore.make 0 in
  let a = started (fun () -> Semaphore.acquire s) in
  spawn (fun () -> Sim.cancel a);
  let b = Sim.create (fun () -> Semaphore.acquire s) in
  spawn (fun () ->
      Sim.run b;
      Semaphore.release s);
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          let got =
            List.length
              (List.filter (fun o -> outcome o = Some (Ok ())) [ a; b ])
          in
          got + Semaphore.get_value s = 1
          && (outcome a = Some (Ok ()) || is_cancelled (outcome a))
          && (Semaphore.get_value s = 0 || outcome b = Some (Ok ()))))

(* Condition: two waiters for one token, the first cancelled: the token is
   consumed by exactly one waiter, never lost with the cancelled one, and
   the mutex ends free. *)
let condition_cancel_waiter () =
  let m = Mutex.create () and c = Condition.create () in
  let tokens = ref 0 in
  (* A cancelled [wait] raises holding the mutex again: [protect] frees it. *)
  let consume () =
    Mutex.protect m (fun () ->
        while !tokens = 0 do
          Condition.wait c m
        done;
        decr tokens)
  in
  let a = started consume in
  spawn (fun () -> Sim.cancel a);
  let b = Sim.create consume in
  spawn (fun () ->
      Sim.run b;
      ignore
        (Sim.start (fun () ->
             Mutex.lock m;
             incr tokens;
             Condition.signal c;
             Mutex.unlock m)));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          (not (Mutex.is_locked m))
          && !tokens = 0
          &&
          match (outcome a, outcome b) with
          | Some (Ok ()), None -> true
          | (None | Some (Error Contract.Cancelled)), Some (Ok ()) -> true
          | _ -> false))

(* Channel with [capacity] slots, full beforehand: a sender cancelled while
   a receiver takes either sent its value (it is next in the channel) or did
   not (and the channel holds nothing more); nothing is lost or doubled. *)
let channel_cancel_sender capacity () =
  let ch = Channel.create capacity in
  for i = 1 to capacity do
    assert (Channel.try_send ch i)
  done;
  let s = started (fun () -> Channel.send ch 0) in
  spawn (fun () -> Sim.cancel s);
  let r = started (fun () -> Channel.recv ch) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          let rest =
            List.init (Channel.length ch) (fun _ -> Channel.try_recv ch)
          in
          let expected_rest =
            List.init (max 0 (capacity - 1)) (fun i -> Some (i + 2))
          in
          let first = if capacity = 0 then 0 else 1 in
          match outcome s with
          | Some (Ok ()) ->
              outcome r = Some (Ok first)
              && rest = expected_rest @ if capacity = 0 then [] else [ Some 0 ]
          | Some (Error Contract.Cancelled) ->
              rest = expected_rest
              && (outcome r = Some (Ok first)
                 || (capacity = 0 && outcome r = None))
          | _ -> false))

(* Channel with [capacity] slots: a receiver cancelled while a value is
   sent either received it or left it to the next receiver. *)
let channel_cancel_receiver capacity () =
  let ch = Channel.create capacity in
  let r = started (fun () -> Channel.recv ch) in
  spawn (fun () -> Sim.cancel r);
  let s = started (fun () -> Channel.send ch 1) in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          match outcome r with
          | Some (Ok 1) -> outcome s = Some (Ok ()) && Channel.length ch = 0
          | Some (Error Contract.Cancelled) ->
              (* The value waits in a slot, or with its blocked sender. *)
              (capacity > 0 || outcome s = None) && Channel.try_recv ch = Some 1
          | _ -> false))

(* Channel: two receivers, the first cancelled, one send: the value goes to
   exactly one of them or stays in the channel, never to the cancelled one
   unless it returned it. *)
let channel_pass_on capacity () =
  let ch = Channel.create capacity in
  let a = started (fun () -> Channel.recv ch) in
  spawn (fun () -> Sim.cancel a);
  let b = Sim.create (fun () -> Channel.recv ch) in
  spawn (fun () ->
      Sim.run b;
      ignore (Sim.start (fun () -> Channel.send ch 1)));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          match (outcome a, outcome b) with
          | Some (Ok 1), None -> true
          | (None | Some (Error Contract.Cancelled)), Some (Ok 1) -> true
          | _ -> false))

(* Channel: closing wakes a blocked receiver with [Closed], or it received
   the value sent before. *)
let channel_close () =
  let ch = Channel.create 0 in
  let r = started (fun () -> Channel.recv ch) in
  spawn (fun () -> Channel.close ch);
  Atomic.final (fun () ->
      Atomic.check (fun () -> outcome r = Some (Error Channel.Closed)))

(* Channel: a sender blocked when the channel closes still delivers its
   value (as documented); one that arrives after the close raises [Closed].
   The receiver drains what was sent, then gets [Closed]. *)
let channel_close_drains () =
  let ch = Channel.create 1 in
  assert (Channel.try_send ch 1);
  let s = started (fun () -> Channel.send ch 2) in
  spawn (fun () -> Channel.close ch);
  let r =
    started (fun () ->
        let a = Channel.recv ch in
        let b = Channel.recv ch in
        match Channel.recv ch with
        | _ -> None
        | exception Channel.Closed -> Some (a, b))
  in
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          match (outcome s, outcome r) with
          | Some (Ok ()), Some (Ok (Some (1, 2))) -> true
          | Some (Error Channel.Closed), Some (Error Channel.Closed) -> true
          | _ -> false))

(* Lazy: the forcer waits inside the computation and a second fiber waits
   for it; whichever of them is cancelled, the other gets the value and the
   lazy value ends forced (a cancelled forcer hands the computation on). *)
let lazy_cancel ~cancel_forcer () =
  let p = Promise.create () in
  let l = Lazy.from_fun (fun () -> Promise.await p) in
  let a = started (fun () -> Lazy.force l) in
  let b = started (fun () -> Lazy.force l) in
  let victim = if cancel_forcer then a else b in
  spawn (fun () ->
      Sim.cancel victim;
      ignore (Sim.start (fun () -> Promise.fill p 1)));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          let ok o = outcome o = Some (Ok 1) in
          let other = if cancel_forcer then b else a in
          Lazy.is_val l && ok other
          && (ok victim || is_cancelled (outcome victim))))

let () =
  run "cancel wakes a waiter" cancel_wakes;
  run "promise fill" promise_fill;
  run "promise cancel" promise_cancel;
  run "mvar handoff" mvar_handoff;
  run "mvar cancel taker" mvar_cancel_taker;
  run "mvar cancel putter" mvar_cancel_putter;
  run "mutex exclusion" mutex_exclusion;
  run "mutex cancel waiter" mutex_cancel_waiter;
  run "semaphore cancel waiter" semaphore_cancel_waiter;
  run "semaphore pass on" semaphore_pass_on;
  run "condition cancel waiter" condition_cancel_waiter;
  List.iter
    (fun n ->
      run
        (Printf.sprintf "channel(%d) cancel sender" n)
        (channel_cancel_sender n);
      run
        (Printf.sprintf "channel(%d) cancel receiver" n)
        (channel_cancel_receiver n);
      run (Printf.sprintf "channel(%d) pass on" n) (channel_pass_on n))
    [ 0; 1; 2 ];
  run "channel close" channel_close;
  run "channel close drains a blocked sender" channel_close_drains;
  run "lazy cancel forcer" (lazy_cancel ~cancel_forcer:true);
  run "lazy cancel waiter" (lazy_cancel ~cancel_forcer:false)
