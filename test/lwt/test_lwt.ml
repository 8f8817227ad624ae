(* The Lwt bridge: Lwt on the main domain (Lwt_main.run), Braid fibers on
   other domains, talking through the same structures in both directions;
   Lwt.cancel withdrawing waiters with nothing lost; exceptions crossing the
   bridge; await_lwt from every kind of caller. *)

open Lwt.Syntax
open Braid_sync
module B = Braid_lwt
module Fiber = Braid.Fiber

let check_int = Alcotest.(check int)
let check_bool = Alcotest.(check bool)

exception Boom of int

(* Each test runs its own Lwt loop on the main domain with a fresh bridge. *)
let lwt f () = Lwt_main.run (f (B.create ()))

(* [Braid_fifo.run main] on a new domain. *)
let fifo_domain main = Domain.spawn (fun () -> Braid_fifo.run main)

let outcome p =
  Lwt.catch (fun () -> Lwt.map Result.ok p) (fun e -> Lwt.return (Error e))

let expect_canceled name p =
  let+ r = outcome p in
  match r with
  | Error Lwt.Canceled -> ()
  | Ok _ -> Alcotest.failf "%s: resolved, expected Lwt.Canceled" name
  | Error e ->
      Alcotest.failf "%s: rejected with %s, expected Lwt.Canceled" name
        (Printexc.to_string e)

let expect_invalid_arg name f =
  match f () with
  | _ -> Alcotest.failf "%s: expected Invalid_argument" name
  | exception Invalid_argument _ -> ()

let is_pending p = Lwt.state p = Lwt.Sleep

(* Lets Lwt's loop turn a few times: bridge fibers queued behind the current
   callback get to run. *)
let rec settle n =
  if n = 0 then Lwt.return_unit
  else Lwt.bind (Lwt.pause ()) (fun () -> settle (n - 1))

(* {1 run} *)

let run_basics t =
  let p = B.run t (fun () -> 6 * 7) in
  check_bool "no waiting: resolved at once" true (Lwt.state p = Lwt.Return 42);
  let* r = outcome (B.run t (fun () -> raise (Boom 1))) in
  check_bool "exception rejects" true (r = Error (Boom 1));
  let m = Mvar.create_empty () in
  let p = B.run t (fun () -> Mvar.take m + Mvar.take m) in
  check_bool "waiting fiber: pending" true (is_pending p);
  let* () = Lwt.pause () in
  check_bool "Lwt ran meanwhile" true (is_pending p);
  check_bool "try_put from Lwt code" true (Mvar.try_put m 1);
  let* () = B.Mvar.put t m 2 in
  let* v = p in
  check_int "sum" 3 v;
  Lwt.return_unit

(* An operation that need not wait is done on the spot: its promise is
   resolved (or rejected) when the call returns, as Lwt_mvar's are; one that
   must wait still queues behind the waiters before it. *)
let no_wait_resolves_at_once t =
  let m = Mvar.create_empty () in
  check_bool "put into an empty Mvar" true
    (Lwt.state (B.Mvar.put t m 1) = Lwt.Return ());
  check_bool "take from a full one" true
    (Lwt.state (B.Mvar.take t m) = Lwt.Return 1);
  let first = B.Mvar.take t m and second = B.Mvar.take t m in
  check_bool "takers wait" true (is_pending first && is_pending second);
  check_bool "put to a waiting taker" true
    (Lwt.state (B.Mvar.put t m 2) = Lwt.Return ());
  let* v = first in
  check_int "the first taker gets it" 2 v;
  let* () = B.Mvar.put t m 3 in
  let* v = second in
  check_int "then the second" 3 v;
  let s = Semaphore.make 1 in
  check_bool "free permit" true
    (Lwt.state (B.Semaphore.acquire t s) = Lwt.Return ());
  let c = Channel.create 1 in
  check_bool "send with room" true
    (Lwt.state (B.Channel.send t c 4) = Lwt.Return ());
  check_bool "recv a ready value" true
    (Lwt.state (B.Channel.recv t c) = Lwt.Return 4);
  Channel.close c;
  check_bool "send to a closed channel" true
    (Lwt.state (B.Channel.send t c 5) = Lwt.Fail Channel.Closed);
  check_bool "recv from a closed, drained one" true
    (Lwt.state (B.Channel.recv t c) = Lwt.Fail Channel.Closed);
  let p = Promise.create () in
  Promise.fill_error p (Boom 2);
  check_bool "a failed promise" true
    (Lwt.state (B.Promise.await t p) = Lwt.Fail (Boom 2));
  check_bool "its failure observed" true (Promise.unobserved_error p = None);
  let d =
    Domain.spawn (fun () ->
        match B.Mvar.put t (Mvar.create_empty ()) 0 with
        | _ -> false
        | exception Invalid_argument _ -> true)
  in
  check_bool "still only on Lwt's thread" true (Domain.join d);
  Lwt.return_unit

let run_off_thread t =
  let d =
    Domain.spawn (fun () ->
        match B.run t (fun () -> ()) with
        | _ -> false
        | exception Invalid_argument _ -> true)
  in
  check_bool "run from another domain" true (Domain.join d);
  Lwt.return_unit

(* Fibers forked inside the bridge run in the bridge; a switch waits for
   them. *)
let fork_and_switch t =
  let* total =
    B.run t (fun () ->
        let ch = Channel.create 0 in
        Braid.Switch.run (fun sw ->
            for i = 1 to 10 do
              ignore (Braid.Switch.fork sw (fun () -> Channel.send ch i))
            done;
            let sum = ref 0 in
            for _ = 1 to 10 do
              sum := !sum + Channel.recv ch
            done;
            !sum))
  in
  check_int "sum of forked senders" 55 total;
  Lwt.return_unit

let unjoined_failure_reported t =
  let reported = ref [] in
  let saved = !Lwt.async_exception_hook in
  (Lwt.async_exception_hook := fun e -> reported := e :: !reported);
  let* () =
    B.run t (fun () ->
        ignore (Fiber.fork (fun () -> raise (Boom 2)));
        let joined = Fiber.fork (fun () -> raise (Boom 3)) in
        match Fiber.join joined with () -> () | exception Boom 3 -> ())
  in
  let* () = settle 5 in
  Lwt.async_exception_hook := saved;
  check_bool "only the unjoined failure is reported" true
    (!reported = [ Boom 2 ]);
  Lwt.return_unit

(* A fiber that keeps yielding must not starve Lwt threads. *)
let yielding_fiber_is_fair t =
  let stop = ref false in
  let spinner =
    B.run t (fun () ->
        let n = ref 0 in
        while not !stop do
          Fiber.yield ();
          incr n
        done;
        !n)
  in
  let* () = settle 3 in
  stop := true;
  let* n = spinner in
  check_bool "the fiber ran" true (n > 0);
  Lwt.return_unit

(* {1 Messages} *)

(* Every message crosses the bridge twice: Lwt threads send 0..n-1 to Braid
   fibers on another domain, which send each one back to Lwt threads. *)
let hundred_thousand_messages t =
  let n = 100_000 and lwt_threads = 4 and braid_fibers = 4 in
  let to_braid = Channel.create 16 and to_lwt = Channel.create 16 in
  let seen_by_braid = Array.make n 0 in
  let braid =
    fifo_domain (fun () ->
        Braid.Switch.run (fun sw ->
            for _ = 1 to braid_fibers do
              ignore
                (Braid.Switch.fork sw (fun () ->
                     try
                       while true do
                         let v = Channel.recv to_braid in
                         seen_by_braid.(v) <- seen_by_braid.(v) + 1;
                         Channel.send to_lwt v
                       done
                     with Channel.Closed -> ()))
            done))
  in
  let seen_by_lwt = Array.make n 0 in
  let next_to_send = ref 0 and claimed = ref 0 in
  let rec producer () =
    if !next_to_send >= n then Lwt.return_unit
    else
      let v = !next_to_send in
      incr next_to_send;
      let* () = B.Channel.send t to_braid v in
      producer ()
  in
  let rec consumer () =
    if !claimed >= n then Lwt.return_unit
    else (
      incr claimed;
      let* v = B.Channel.recv t to_lwt in
      seen_by_lwt.(v) <- seen_by_lwt.(v) + 1;
      consumer ())
  in
  let* () =
    Lwt.join
      (List.init lwt_threads (fun _ -> producer ())
      @ List.init lwt_threads (fun _ -> consumer ()))
  in
  Channel.close to_braid;
  Domain.join braid;
  let exactly_once seen = Array.for_all (fun c -> c = 1) seen in
  check_bool "Braid fibers got each message once" true
    (exactly_once seen_by_braid);
  check_bool "Lwt threads got each message once" true (exactly_once seen_by_lwt);
  Lwt.return_unit

(* One message in flight at a time, so a lost cross-domain wake-up hangs the
   exchange (and the watchdog fails the test). *)
let ping_pong_one_in_flight t =
  let n = 20_000 in
  let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
  let echo =
    fifo_domain (fun () ->
        for _ = 1 to n do
          Mvar.put pong (Mvar.take ping + 1)
        done)
  in
  let rec loop i =
    if i = n then Lwt.return_unit
    else
      let* () = B.Mvar.put t ping i in
      let* v = B.Mvar.take t pong in
      check_int "echo" (i + 1) v;
      loop (i + 1)
  in
  let* () = loop 0 in
  Domain.join echo;
  Lwt.return_unit

(* Answers slower than a hand-over between two running threads: Lwt's loop
   blocks in its wait, and each answer must wake it (a lost wake-up hangs
   here until the watchdog fires); every other answer comes at once. *)
let ping_pong_slow_answers t =
  let n = 200 in
  let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
  let echo =
    fifo_domain (fun () ->
        for i = 1 to n do
          let v = Mvar.take ping in
          if i mod 2 = 0 then Unix.sleepf 0.0005;
          Mvar.put pong (v + 1)
        done)
  in
  let rec loop i =
    if i = n then Lwt.return_unit
    else
      let* () = B.Mvar.put t ping i in
      let* v = B.Mvar.take t pong in
      check_int "echo" (i + 1) v;
      loop (i + 1)
  in
  let* () = loop 0 in
  Domain.join echo;
  Lwt.return_unit

(* Many short [Lwt_main.run]s, each timed, sharing a bridge and a fiber on
   another domain: the last answer of each resolves the promise the run
   waits for, and the run must then return (a bridge that ran Lwt code
   in an enter hook once left it waiting for libev's 60 s cap). *)
let main_promise_resolved_before_wait () =
  let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
  let runs = 300 and trips = 20 in
  let echo =
    fifo_domain (fun () ->
        for _ = 1 to runs * trips do
          Mvar.put pong (Mvar.take ping + 1)
        done)
  in
  let t = B.create () and slowest = ref 0. in
  for _ = 1 to runs do
    let t0 = Unix.gettimeofday () in
    Lwt_main.run
      (let rec loop i =
         if i = trips then Lwt.return_unit
         else
           let* () = B.Mvar.put t ping i in
           let* v = B.Mvar.take t pong in
           check_int "echo" (i + 1) v;
           loop (i + 1)
       in
       loop 0);
    slowest := Float.max !slowest (Unix.gettimeofday () -. t0)
  done;
  Domain.join echo;
  if !slowest > 10. then
    Alcotest.failf
      "a run took %.1f s: Lwt's loop waited after its promise was resolved"
      !slowest

(* {1 Cancellation} *)

let cancel_mvar_take t =
  let m = Mvar.create_empty () in
  let first = B.Mvar.take t m and second = B.Mvar.take t m in
  Lwt.cancel first;
  let* () = expect_canceled "first take" first in
  check_bool "try_put" true (Mvar.try_put m 7);
  let* v = second in
  check_int "the value went to the next taker" 7 v;
  check_bool "nothing left over" true (Mvar.is_empty m);
  Lwt.return_unit

let cancel_mvar_put t =
  let m = Mvar.create 1 in
  let first = B.Mvar.put t m 2 and second = B.Mvar.put t m 3 in
  Lwt.cancel first;
  let* () = expect_canceled "first put" first in
  let* a = B.Mvar.take t m in
  let* () = second in
  let* b = B.Mvar.take t m in
  check_bool "the cancelled put's value was not put" true
    ((a, b) = (1, 3) && Mvar.is_empty m);
  Lwt.return_unit

let cancel_mutex_lock t =
  let m = Mutex.create () in
  let a = B.Owner.create ()
  and b = B.Owner.create ()
  and c = B.Owner.create () in
  let* () = B.Mutex.lock t ~owner:a m in
  let pb = B.Mutex.lock t ~owner:b m and pc = B.Mutex.lock t ~owner:c m in
  Lwt.cancel pb;
  let* () = expect_canceled "b's lock" pb in
  B.Mutex.unlock t ~owner:a m;
  let* () = pc in
  expect_invalid_arg "b does not hold the lock" (fun () ->
      B.Mutex.unlock t ~owner:b m);
  B.Mutex.unlock t ~owner:c m;
  check_bool "free at the end" false (Mutex.is_locked m);
  Lwt.return_unit

(* The holder is a fiber on another domain: the hand-over to the next waiter
   comes from there. *)
let cancel_mutex_lock_remote_holder t =
  let m = Mutex.create () in
  let locked = Promise.create () and release = Promise.create () in
  let holder =
    fifo_domain (fun () ->
        Mutex.lock m;
        Promise.fill locked ();
        Promise.await release;
        Mutex.unlock m)
  in
  let* () = B.Promise.await t locked in
  let b = B.Owner.create () and c = B.Owner.create () in
  let pb = B.Mutex.lock t ~owner:b m and pc = B.Mutex.lock t ~owner:c m in
  Lwt.cancel pb;
  let* () = expect_canceled "b's lock" pb in
  Promise.fill release ();
  let* () = pc in
  B.Mutex.unlock t ~owner:c m;
  Domain.join holder;
  check_bool "free at the end" false (Mutex.is_locked m);
  Lwt.return_unit

let cancel_with_lock t =
  let m = Mutex.create () in
  let a = B.Owner.create () in
  let* () = B.Mutex.lock t ~owner:a m in
  let ran = ref false in
  let p =
    B.Mutex.with_lock t m (fun _ ->
        ran := true;
        Lwt.return_unit)
  in
  Lwt.cancel p;
  let* () = expect_canceled "with_lock" p in
  B.Mutex.unlock t ~owner:a m;
  check_bool "body not run, lock free" true
    ((not !ran) && not (Mutex.is_locked m));
  let* v = B.Mutex.with_lock t m (fun _ -> Lwt.return 5) in
  check_int "with_lock" 5 v;
  check_bool "unlocked after" false (Mutex.is_locked m);
  Lwt.return_unit

let cancel_channel_recv t =
  let c = Channel.create 0 in
  let first = B.Channel.recv t c and second = B.Channel.recv t c in
  Lwt.cancel first;
  let* () = expect_canceled "first recv" first in
  let sender = fifo_domain (fun () -> Channel.send c 9) in
  let* v = second in
  Domain.join sender;
  check_int "the value went to the next receiver" 9 v;
  Lwt.return_unit

let cancel_channel_send t =
  let c = Channel.create 0 in
  let first = B.Channel.send t c 1 in
  Lwt.cancel first;
  let* () = expect_canceled "first send" first in
  check_bool "nothing to receive" true (Channel.try_recv c = None);
  let second = B.Channel.send t c 2 in
  let receiver = fifo_domain (fun () -> Channel.recv c) in
  let* () = second in
  check_int "only the second value" 2 (Domain.join receiver);
  Lwt.return_unit

let cancel_semaphore t =
  let s = Semaphore.make 0 in
  let first = B.Semaphore.acquire t s and second = B.Semaphore.acquire t s in
  Lwt.cancel first;
  let* () = expect_canceled "first acquire" first in
  Semaphore.release s;
  let* () = second in
  check_int "the permit went to the next waiter" 0 (Semaphore.get_value s);
  Lwt.return_unit

(* Cancelled before its fiber even started: queued behind the running
   fiber. *)
let cancel_before_start t =
  let m = Mvar.create_empty () in
  let* inner =
    B.run t (fun () ->
        let p = B.Mvar.take t m in
        Lwt.cancel p;
        p)
  in
  let* () = expect_canceled "queued take" inner in
  check_bool "still takes nothing" true
    (Mvar.try_put m 1 && not (Mvar.is_empty m));
  Lwt.return_unit

(* The value was handed over, but the resumption had not run yet when
   Lwt.cancel came: the operation resolves with the value. Made deterministic
   by doing it all from a fiber of the bridge, whose tasks run in order. *)
let cancel_after_hand_over t =
  let m = Mvar.create_empty () in
  let* taken =
    B.run t (fun () ->
        let p = B.Mvar.take t m in
        Fiber.yield ();
        (* The take now waits; hand it a value, then cancel it. *)
        check_bool "try_put" true (Mvar.try_put m 5);
        Lwt.cancel p;
        p)
  in
  let* v = taken in
  check_int "the value was delivered" 5 v;
  check_bool "and not left in the MVar" true (Mvar.is_empty m);
  Lwt.return_unit

let cancel_condition_wait t =
  let m = Mutex.create () and c = Condition.create () in
  let waiting = ref None in
  let p =
    B.Mutex.with_lock t m (fun owner ->
        let w = B.Condition.wait t ~owner c m in
        waiting := Some w;
        w)
  in
  let* () = settle 3 in
  check_bool "released while waiting" false (Mutex.is_locked m);
  Lwt.cancel p;
  let* () = expect_canceled "with_lock around wait" p in
  (match !waiting with
  | Some w ->
      check_bool "wait cancelled" true (Lwt.state w = Lwt.Fail Lwt.Canceled)
  | None -> Alcotest.fail "the body never ran");
  check_bool "unlocked by with_lock" false (Mutex.is_locked m);
  Condition.signal c;
  let* () = B.Mutex.with_lock t m (fun _ -> Lwt.return_unit) in
  Lwt.return_unit

(* Hand-overs from another domain racing with Lwt.cancel: each value is
   received exactly once, by a take that resolves, cancelled or not. *)
let cancel_race_mvar t =
  let n = 20_000 in
  let m = Mvar.create_empty () in
  let producer =
    fifo_domain (fun () ->
        for i = 1 to n do
          Mvar.put m i
        done;
        Mvar.put m 0)
  in
  let seen = Array.make (n + 1) 0 in
  let rec loop i =
    let p = B.Mvar.take t m in
    let* () =
      match i mod 3 with
      | 0 -> Lwt.return_unit
      | 1 ->
          Lwt.cancel p;
          Lwt.return_unit
      | _ ->
          let+ () = Lwt.pause () in
          Lwt.cancel p
    in
    let* r = outcome p in
    match r with
    | Ok 0 -> Lwt.return_unit
    | Ok v ->
        seen.(v) <- seen.(v) + 1;
        loop (i + 1)
    | Error Lwt.Canceled -> loop (i + 1)
    | Error e -> Lwt.fail e
  in
  let* () = loop 0 in
  Domain.join producer;
  check_bool "every value taken exactly once" true
    (Array.for_all (fun c -> c = 1) (Array.sub seen 1 n));
  Lwt.return_unit

let cancel_race_channel t =
  let n = 20_000 in
  let c = Channel.create 2 in
  let producer =
    fifo_domain (fun () ->
        for i = 1 to n do
          Channel.send c i
        done;
        Channel.close c)
  in
  let seen = Array.make (n + 1) 0 in
  let rec loop i =
    let p = B.Channel.recv t c in
    if i mod 2 = 1 then Lwt.cancel p;
    let* r = outcome p in
    match r with
    | Ok v ->
        seen.(v) <- seen.(v) + 1;
        loop (i + 1)
    | Error Lwt.Canceled -> loop (i + 1)
    | Error Channel.Closed -> Lwt.return_unit
    | Error e -> Lwt.fail e
  in
  let* () = loop 0 in
  Domain.join producer;
  check_bool "every value received exactly once" true
    (Array.for_all (fun c -> c = 1) (Array.sub seen 1 n));
  Lwt.return_unit

(* Lwt threads and a fiber on another domain share a mutex; half the Lwt
   requests are cancelled. Mutual exclusion holds and no lock is leaked. *)
let cancel_race_mutex t =
  let rounds = 5_000 in
  let m = Mutex.create () in
  let inside = Atomic.make 0 and violations = Atomic.make 0 in
  let critical () =
    if Atomic.fetch_and_add inside 1 <> 0 then Atomic.incr violations;
    Atomic.decr inside
  in
  let stop = Atomic.make false in
  let rival =
    fifo_domain (fun () ->
        while not (Atomic.get stop) do
          Mutex.protect m critical;
          Fiber.yield ()
        done)
  in
  let rec loop i =
    if i = rounds then Lwt.return_unit
    else
      let owner = B.Owner.create () in
      let p = B.Mutex.lock t ~owner m in
      if i mod 2 = 1 then Lwt.cancel p;
      let* r = outcome p in
      (match r with
      | Ok () ->
          critical ();
          B.Mutex.unlock t ~owner m
      | Error Lwt.Canceled -> ()
      | Error e -> raise e);
      loop (i + 1)
  in
  let* () = loop 0 in
  Atomic.set stop true;
  Domain.join rival;
  check_int "mutual exclusion" 0 (Atomic.get violations);
  check_bool "no lock leaked" false (Mutex.is_locked m);
  Lwt.return_unit

(* Cancelled operations leave nothing behind, in the structure or in the
   bridge: the heap stays flat over many block-then-cancel cycles. The loop
   runs before the test's first bind, outside any drain, so each cancellation
   completes synchronously. *)
let no_leak_on_cancel t =
  let cycles = 200_000 and warm_up = 10_000 and allowed_growth_words = 20_000 in
  let live_words () =
    Gc.full_major ();
    (Gc.stat ()).live_words
  in
  let promise = Promise.create () and m = Mvar.create_empty () in
  let c = Channel.create 0 and mutex = Mutex.create () in
  let holder = B.Owner.create () in
  ignore (B.Mutex.lock t ~owner:holder mutex);
  let owner = B.Owner.create () in
  let cancel_at_once name p =
    Lwt.cancel p;
    match Lwt.state p with
    | Lwt.Fail Lwt.Canceled -> ()
    | _ -> Alcotest.failf "%s: not cancelled at once" name
  in
  let operations =
    [
      ( "Promise.await",
        fun () -> cancel_at_once "await" (B.Promise.await t promise) );
      ("Mvar.take", fun () -> cancel_at_once "take" (B.Mvar.take t m));
      ("Channel.recv", fun () -> cancel_at_once "recv" (B.Channel.recv t c));
      ("Channel.send", fun () -> cancel_at_once "send" (B.Channel.send t c 0));
      ( "Mutex.lock",
        fun () -> cancel_at_once "lock" (B.Mutex.lock t ~owner mutex) );
    ]
  in
  let cycle _name op = op () in
  List.iter
    (fun (name, op) ->
      for _ = 1 to warm_up do
        cycle name op
      done;
      let before = live_words () in
      for _ = 1 to cycles do
        cycle name op
      done;
      let after = live_words () in
      if after - before > allowed_growth_words then
        Alcotest.failf "%s: live words grew from %d to %d over %d cycles" name
          before after cycles)
    operations;
  B.Mutex.unlock t ~owner:holder mutex;
  Lwt.return_unit

(* {1 Owners and conditions} *)

let owner_rules t =
  let m = Mutex.create () in
  let a = B.Owner.create () in
  expect_invalid_arg "unlock without holding" (fun () ->
      B.Mutex.unlock t ~owner:a m);
  let* () = B.Mutex.lock t ~owner:a m in
  let* r = outcome (B.Mutex.lock t ~owner:a m) in
  (match r with
  | Error (Invalid_argument _) -> ()
  | _ -> Alcotest.fail "relocking by the owner must be rejected");
  let other = B.Owner.create () in
  let pending = B.Mutex.lock t ~owner:other m in
  expect_invalid_arg "an owner runs one operation at a time" (fun () ->
      B.Mutex.lock t ~owner:other m);
  B.Mutex.unlock t ~owner:a m;
  let* () = pending in
  B.Mutex.unlock t ~owner:other m;
  Lwt.return_unit

(* An Lwt thread waits on a condition that a fiber on another domain
   signals. *)
let condition_across_domains t =
  let m = Mutex.create () and c = Condition.create () in
  let ready = ref false in
  let signaller =
    fifo_domain (fun () ->
        Mutex.protect m (fun () ->
            ready := true;
            Condition.signal c))
  in
  let* () =
    B.Mutex.with_lock t m (fun owner ->
        let rec wait () =
          if !ready then Lwt.return_unit
          else
            let* () = B.Condition.wait t ~owner c m in
            wait ()
        in
        wait ())
  in
  Domain.join signaller;
  check_bool "unlocked" false (Mutex.is_locked m);
  Lwt.return_unit

let lazy_across_domains t =
  let gate = Promise.create () in
  let computed = Atomic.make 0 in
  let l =
    Lazy.from_fun (fun () ->
        Atomic.incr computed;
        Promise.await gate;
        42)
  in
  let started = Promise.create () in
  let forcer =
    fifo_domain (fun () ->
        let _ = Fiber.fork (fun () -> Promise.fill started ()) in
        Lazy.force l)
  in
  let* () = B.Promise.await t started in
  let p = B.Lazy.force t l in
  Promise.fill gate ();
  let* v = p in
  check_int "Lwt's force" 42 v;
  check_int "the domain's force" 42 (Domain.join forcer);
  check_int "computed once" 1 (Atomic.get computed);
  let* v = B.Lazy.force t (Lazy.from_fun (fun () -> 7)) in
  check_int "computed in the bridge" 7 v;
  Lwt.return_unit

(* {1 Exceptions across the bridge} *)

let exception_braid_to_lwt pool t =
  let p = Promise.create () in
  let filler = fifo_domain (fun () -> Promise.fill_error p (Boom 4)) in
  let* r = outcome (B.Promise.await t p) in
  Domain.join filler;
  check_bool "promise filled with an exception" true (r = Error (Boom 4));
  let* r =
    outcome
      (B.Promise.await t (Braid_pool.async pool (fun () -> raise (Boom 5))))
  in
  check_bool "failing pool task" true (r = Error (Boom 5));
  Lwt.return_unit

let exception_lwt_to_braid t =
  let lwt_promise, resolver = Lwt.wait () in
  let result = Promise.create () in
  let awaiter =
    fifo_domain (fun () ->
        Promise.fill result
          (match B.await_lwt t lwt_promise with
          | () -> None
          | exception e -> Some e))
  in
  let* () = Lwt.pause () in
  Lwt.wakeup_exn resolver (Boom 6);
  let* r = B.Promise.await t result in
  Domain.join awaiter;
  check_bool "rejected Lwt promise raises in the fiber" true (r = Some (Boom 6));
  let* r =
    B.run t (fun () ->
        match B.await_lwt t (Lwt.fail (Boom 7)) with
        | () -> None
        | exception e -> Some e)
  in
  check_bool "inside the bridge too" true (r = Some (Boom 7));
  Lwt.return_unit

(* {1 await_lwt from every kind of caller} *)

(* An Lwt promise (made on Lwt's thread) that Lwt resolves a little later. *)
let later v =
  let p, r = Lwt.wait () in
  Lwt.async (fun () ->
      let+ () = Lwt_unix.sleep 0.001 in
      Lwt.wakeup r v);
  p

let await_from_everywhere pool t =
  let result = Promise.create () in
  let p1 = later 1 in
  let from_fifo =
    fifo_domain (fun () -> Promise.fill result (B.await_lwt t p1))
  in
  let* v = B.Promise.await t result in
  Domain.join from_fifo;
  check_int "FIFO fiber on another domain" 1 v;
  let p2 = later 2 in
  let* v =
    B.Promise.await t (Braid_pool.async pool (fun () -> B.await_lwt t p2))
  in
  check_int "pool task" 2 v;
  let p3 = later 3 and result = Promise.create () in
  let from_domain =
    Domain.spawn (fun () -> Promise.fill result (B.await_lwt t p3))
  in
  let* v = B.Promise.await t result in
  Domain.join from_domain;
  check_int "bare domain" 3 v;
  let p4 = later 4 and result = Promise.create () in
  let th =
    Thread.create (fun () -> Promise.fill result (B.await_lwt t p4)) ()
  in
  let* v = B.Promise.await t result in
  Thread.join th;
  check_int "systhread of Lwt's domain" 4 v;
  let* v = B.run t (fun () -> B.await_lwt t (later 5)) in
  check_int "fiber of the bridge" 5 v;
  let* v = B.run t (fun () -> B.await_lwt t (Lwt.return 6)) in
  check_int "already resolved" 6 v;
  expect_invalid_arg "plain Lwt code" (fun () -> B.await_lwt t (Lwt.return 0));
  Lwt.return_unit

(* A cancelled awaiter raises at once; the late resolution is harmless. *)
let await_cancelled t =
  let never, resolver = Lwt.wait () in
  let waiting = Promise.create () and result = Promise.create () in
  let d =
    fifo_domain (fun () ->
        let h = Fiber.fork (fun () -> B.await_lwt t never) in
        Fiber.yield ();
        Promise.fill waiting ();
        Fiber.cancel h;
        Promise.fill result
          (match Fiber.join h with
          | () -> false
          | exception Braid.Cancelled -> true))
  in
  let* () = B.Promise.await t waiting in
  let* cancelled = B.Promise.await t result in
  Domain.join d;
  check_bool "await_lwt raised Cancelled" true cancelled;
  Lwt.wakeup resolver ();
  let* () = settle 3 in
  Lwt.return_unit

let () =
  Test_support.Watchdog.start ~seconds:120. "test_lwt";
  let pool = Braid_pool.create ~domains:1 () in
  let case name f = Alcotest.test_case name `Quick (lwt f) in
  Alcotest.run ~and_exit:false "braid_lwt"
    [
      ( "run",
        [
          case "value, exception, waiting" run_basics;
          case "only on Lwt's thread" run_off_thread;
          case "no waiting, no fiber: resolved at once" no_wait_resolves_at_once;
          case "fork and switch inside" fork_and_switch;
          case "unjoined fork failure reported" unjoined_failure_reported;
          case "yielding fiber does not starve Lwt" yielding_fiber_is_fair;
        ] );
      ( "messages",
        [
          case "100,000 Lwt -> Braid -> Lwt through channels"
            hundred_thousand_messages;
          case "ping-pong with another domain" ping_pong_one_in_flight;
          case "slow answers" ping_pong_slow_answers;
          Alcotest.test_case "Lwt_main.run's promise resolved before its wait"
            `Quick main_promise_resolved_before_wait;
        ] );
      ( "cancel",
        [
          case "Mvar.take" cancel_mvar_take;
          case "Mvar.put" cancel_mvar_put;
          case "Mutex.lock" cancel_mutex_lock;
          case "Mutex.lock, holder on another domain"
            cancel_mutex_lock_remote_holder;
          case "Mutex.with_lock" cancel_with_lock;
          case "Channel.recv" cancel_channel_recv;
          case "Channel.send" cancel_channel_send;
          case "Semaphore.acquire" cancel_semaphore;
          case "before the fiber started" cancel_before_start;
          case "after the hand-over" cancel_after_hand_over;
          case "Condition.wait" cancel_condition_wait;
          case "race with hand-overs: Mvar" cancel_race_mvar;
          case "race with hand-overs: Channel" cancel_race_channel;
          case "race with hand-overs: Mutex" cancel_race_mutex;
          case "no leak over 200,000 cancellations each" no_leak_on_cancel;
        ] );
      ( "owners",
        [
          case "rules" owner_rules;
          case "condition across domains" condition_across_domains;
          case "lazy across domains" lazy_across_domains;
        ] );
      ( "exceptions",
        [
          case "Braid -> Lwt" (exception_braid_to_lwt pool);
          case "Lwt -> Braid" exception_lwt_to_braid;
        ] );
      ( "await_lwt",
        [
          case "from everywhere" (await_from_everywhere pool);
          case "cancelled awaiter" await_cancelled;
        ] );
    ];
  Braid_pool.shutdown pool
