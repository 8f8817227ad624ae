(* Unit tests of every structure, their cancellation cases included. Each
   test runs inside a FIFO scheduler unless it says otherwise. *)

open Braid_sync
module Fiber = Braid.Fiber

let run = Braid_fifo.run
let fork = Fiber.fork

(* Let every other runnable fiber run until it blocks or finishes. *)
let settle () =
  for _ = 1 to 20 do
    Fiber.yield ()
  done

let expect_cancelled name h =
  match Fiber.join h with
  | _ -> Alcotest.failf "%s: expected Cancelled" name
  | exception Braid.Cancelled -> ()

let check_int = Alcotest.(check int)
let check_bool = Alcotest.(check bool)
let check_ints = Alcotest.(check (list int))

(* Promise *)

let promise_basics () =
  run @@ fun () ->
  let p = Promise.create () in
  check_bool "unfilled" true (Promise.peek p = None);
  let waiter = fork (fun () -> Promise.await p) in
  settle ();
  check_bool "waiter blocked" false (Fiber.is_done waiter);
  Promise.fill p 7;
  check_int "await" 7 (Fiber.join waiter);
  check_int "await filled" 7 (Promise.await p);
  Alcotest.check_raises "second fill" Promise.Already_filled (fun () ->
      Promise.fill p 8);
  check_bool "try_fill" false (Promise.try_fill p (Ok 9))

let promise_error () =
  run @@ fun () ->
  let p = Promise.create () in
  let waiter = fork (fun () -> Promise.await p) in
  settle ();
  Promise.fill_error p Exit;
  Alcotest.check_raises "waiter" Exit (fun () -> ignore (Fiber.join waiter));
  Alcotest.check_raises "later" Exit (fun () -> ignore (Promise.await p));
  check_bool "peek" true
    (match Promise.peek p with Some (Error Exit) -> true | _ -> false)

let promise_cancel () =
  run @@ fun () ->
  let p = Promise.create () in
  let a = fork (fun () -> Promise.await p) in
  let b = fork (fun () -> Promise.await p) in
  settle ();
  Fiber.cancel a;
  expect_cancelled "a" a;
  check_bool "b still waiting" false (Fiber.is_done b);
  Promise.fill p 1;
  check_int "b" 1 (Fiber.join b)

(* Mvar *)

let mvar_basics () =
  run @@ fun () ->
  let m = Mvar.create 1 in
  check_bool "try_put full" false (Mvar.try_put m 2);
  check_int "take" 1 (Mvar.take m);
  check_bool "empty" true (Mvar.is_empty m);
  check_bool "try_take empty" true (Mvar.try_take m = None);
  check_bool "try_put" true (Mvar.try_put m 3);
  check_bool "try_take" true (Mvar.try_take m = Some 3)

let mvar_fifo_order () =
  run @@ fun () ->
  let m = Mvar.create_empty () in
  let log = ref [] in
  let putters = List.init 5 (fun i -> fork (fun () -> Mvar.put m i)) in
  settle ();
  let takers =
    List.init 5 (fun i -> fork (fun () -> log := (i, Mvar.take m) :: !log))
  in
  List.iter Fiber.join putters;
  List.iter Fiber.join takers;
  let values = List.sort compare !log |> List.map snd in
  check_ints "each value once, in order" [ 0; 1; 2; 3; 4 ] values

let mvar_only_fiber_blocks () =
  run @@ fun () ->
  let m = Mvar.create_empty () in
  let ticks = ref 0 in
  let taker = fork (fun () -> Mvar.take m) in
  let ticker =
    fork (fun () ->
        for _ = 1 to 10 do
          incr ticks;
          Fiber.yield ()
        done)
  in
  Fiber.join ticker;
  check_int "ticker ran while taker blocked" 10 !ticks;
  check_bool "taker blocked" false (Fiber.is_done taker);
  Mvar.put m 5;
  check_int "taker" 5 (Fiber.join taker)

let mvar_cancel_taker () =
  run @@ fun () ->
  let m = Mvar.create_empty () in
  let a = fork (fun () -> Mvar.take m) in
  let b = fork (fun () -> Mvar.take m) in
  settle ();
  Fiber.cancel a;
  (* Woken eagerly: before any put. *)
  expect_cancelled "a" a;
  Mvar.put m 42;
  check_int "b gets the value" 42 (Fiber.join b);
  check_bool "nothing left" true (Mvar.is_empty m)

let mvar_cancel_putter () =
  run @@ fun () ->
  let m = Mvar.create 0 in
  let a = fork (fun () -> Mvar.put m 1) in
  let b = fork (fun () -> Mvar.put m 2) in
  settle ();
  Fiber.cancel a;
  expect_cancelled "a" a;
  check_int "first" 0 (Mvar.take m);
  Fiber.join b;
  check_int "second is b's" 2 (Mvar.take m);
  check_bool "a's value was not put" true (Mvar.try_take m = None)

(* Cancelled after its value was accepted: put returns, and the next
   blocking call raises. *)
let mvar_cancel_after_commit () =
  run @@ fun () ->
  let m = Mvar.create 0 in
  let after = ref `Not_reached in
  let a =
    fork (fun () ->
        Mvar.put m 1;
        after := `Put_returned;
        Fiber.yield ())
  in
  settle ();
  (* Take commits a's value and resumes it; cancel before it runs again. *)
  check_int "take" 0 (Mvar.take m);
  Fiber.cancel a;
  expect_cancelled "a" a;
  check_bool "put returned" true (!after = `Put_returned);
  check_int "a's value is there" 1 (Mvar.take m)

(* Mutex *)

let mutex_basics () =
  run @@ fun () ->
  let m = Mutex.create () in
  Mutex.lock m;
  check_bool "locked" true (Mutex.is_locked m);
  check_bool "try_lock when held" false (Mutex.try_lock m);
  Alcotest.check_raises "relock"
    (Invalid_argument "Braid_sync.Mutex.lock: the caller already holds the lock")
    (fun () -> Mutex.lock m);
  Mutex.unlock m;
  Alcotest.check_raises "unlock unlocked"
    (Invalid_argument
       "Braid_sync.Mutex.unlock: the caller does not hold the lock") (fun () ->
      Mutex.unlock m)

let mutex_non_owner () =
  run @@ fun () ->
  let m = Mutex.create () in
  Mutex.lock m;
  let other = fork (fun () -> Mutex.unlock m) in
  Alcotest.check_raises "unlock by another fiber"
    (Invalid_argument
       "Braid_sync.Mutex.unlock: the caller does not hold the lock") (fun () ->
      Fiber.join other);
  check_bool "still locked" true (Mutex.is_locked m);
  Mutex.unlock m

let mutex_exclusion () =
  run @@ fun () ->
  let m = Mutex.create () in
  let inside = ref 0 and max_inside = ref 0 and total = ref 0 in
  let worker () =
    for _ = 1 to 100 do
      Mutex.protect m (fun () ->
          incr inside;
          max_inside := max !max_inside !inside;
          Fiber.yield ();
          incr total;
          decr inside)
    done
  in
  List.init 4 (fun _ -> fork worker) |> List.iter Fiber.join;
  check_int "one at a time" 1 !max_inside;
  check_int "total" 400 !total

let mutex_protect_exn () =
  run @@ fun () ->
  let m = Mutex.create () in
  Alcotest.check_raises "raises" Exit (fun () ->
      Mutex.protect m (fun () -> raise Exit));
  check_bool "released" false (Mutex.is_locked m)

(* The thesis's scenario: main locks; t1 blocks; t1 is cancelled; t2 blocks;
   main unlocks: t2 gets the lock and run returns. *)
let mutex_thesis_scenario () =
  let got = ref [] in
  run (fun () ->
      let m = Mutex.create () in
      Mutex.lock m;
      let t1 =
        fork (fun () -> Mutex.protect m (fun () -> got := "t1" :: !got))
      in
      settle ();
      Fiber.cancel t1;
      let t2 =
        fork (fun () -> Mutex.protect m (fun () -> got := "t2" :: !got))
      in
      settle ();
      Mutex.unlock m;
      expect_cancelled "t1" t1;
      Fiber.join t2;
      check_bool "unlocked at the end" false (Mutex.is_locked m));
  Alcotest.(check (list string)) "only t2 held the lock" [ "t2" ] !got

(* t1 is cancelled after unlock handed it the lock but before it ran: the lock
   must move on to t2, not stay with the cancelled t1. *)
let mutex_cancel_during_handoff () =
  run @@ fun () ->
  let m = Mutex.create () in
  Mutex.lock m;
  let t1 = fork (fun () -> Mutex.lock m) in
  let t2 =
    fork (fun () ->
        Mutex.lock m;
        Mutex.unlock m)
  in
  settle ();
  Fiber.cancel t1;
  Mutex.unlock m;
  expect_cancelled "t1" t1;
  Fiber.join t2;
  check_bool "free" false (Mutex.is_locked m)

(* Condition *)

let condition_signal () =
  run @@ fun () ->
  let m = Mutex.create () and c = Condition.create () in
  let ready = ref false and woke = ref 0 in
  let waiter () =
    Mutex.protect m (fun () ->
        while not !ready do
          Condition.wait c m
        done;
        incr woke)
  in
  let ws = List.init 3 (fun _ -> fork waiter) in
  settle ();
  check_int "all waiting" 0 !woke;
  Mutex.protect m (fun () -> ready := true);
  Condition.signal c;
  settle ();
  check_int "signal wakes one" 1 !woke;
  Condition.broadcast c;
  List.iter Fiber.join ws;
  check_int "broadcast wakes the rest" 3 !woke

let condition_cancel () =
  run @@ fun () ->
  let m = Mutex.create () and c = Condition.create () in
  let held_after_cancel = ref false in
  let a =
    fork (fun () ->
        Mutex.lock m;
        match Condition.wait c m with
        | () -> ()
        | exception Braid.Cancelled ->
            held_after_cancel := Mutex.is_locked m;
            Mutex.unlock m;
            raise Braid.Cancelled)
  in
  let b_woke = ref false in
  let b =
    fork (fun () ->
        Mutex.protect m (fun () ->
            Condition.wait c m;
            b_woke := true))
  in
  settle ();
  Fiber.cancel a;
  expect_cancelled "a" a;
  check_bool "mutex re-acquired before raising" true !held_after_cancel;
  Condition.signal c;
  Fiber.join b;
  check_bool "the signal reached b, not the cancelled a" true !b_woke

let condition_not_owner () =
  run @@ fun () ->
  let m = Mutex.create () and c = Condition.create () in
  Alcotest.check_raises "wait without the mutex"
    (Invalid_argument
       "Braid_sync.Condition.wait: the caller does not hold the lock")
    (fun () -> Condition.wait c m)

(* Semaphore *)

let semaphore_counting () =
  run @@ fun () ->
  let s = Semaphore.make 2 in
  let inside = ref 0 and max_inside = ref 0 in
  let worker () =
    Semaphore.acquire s;
    incr inside;
    max_inside := max !max_inside !inside;
    settle ();
    decr inside;
    Semaphore.release s
  in
  List.init 6 (fun _ -> fork worker) |> List.iter Fiber.join;
  check_int "at most 2" 2 !max_inside;
  check_int "permits back" 2 (Semaphore.get_value s);
  Alcotest.check_raises "negative"
    (Invalid_argument "Braid_sync.Semaphore.make: negative count") (fun () ->
      ignore (Semaphore.make (-1)))

let semaphore_cancel () =
  run @@ fun () ->
  let s = Semaphore.make 0 in
  let a = fork (fun () -> Semaphore.acquire s) in
  let b = fork (fun () -> Semaphore.acquire s) in
  settle ();
  Fiber.cancel a;
  Semaphore.release s;
  expect_cancelled "a" a;
  Fiber.join b;
  check_int "no permit lost or doubled" 0 (Semaphore.get_value s);
  check_bool "try_acquire" false (Semaphore.try_acquire s)

(* Channel *)

let channel_buffered () =
  run @@ fun () ->
  let c = Channel.create 3 in
  List.iter (Channel.send c) [ 1; 2; 3 ];
  check_int "length" 3 (Channel.length c);
  check_bool "full" false (Channel.try_send c 4);
  let sender = fork (fun () -> Channel.send c 4) in
  settle ();
  check_bool "sender blocked" false (Fiber.is_done sender);
  check_ints "fifo" [ 1; 2; 3; 4 ] (List.init 4 (fun _ -> Channel.recv c));
  Fiber.join sender;
  check_bool "drained" true (Channel.try_recv c = None)

let channel_rendezvous () =
  run @@ fun () ->
  let c = Channel.create 0 in
  check_bool "try_send without receiver" false (Channel.try_send c 1);
  let sent = ref false in
  let sender =
    fork (fun () ->
        Channel.send c 1;
        sent := true)
  in
  settle ();
  check_bool "waits for a receiver" false !sent;
  check_int "recv" 1 (Channel.recv c);
  Fiber.join sender;
  check_bool "sent" true !sent

let channel_close () =
  run @@ fun () ->
  let c = Channel.create 1 in
  Channel.send c 1;
  let blocked_sender = fork (fun () -> Channel.send c 2) in
  settle ();
  Channel.close c;
  Alcotest.check_raises "send after close" Channel.Closed (fun () ->
      Channel.send c 3);
  check_int "drain buffer" 1 (Channel.recv c);
  check_int "drain blocked sender" 2 (Channel.recv c);
  Fiber.join blocked_sender;
  Alcotest.check_raises "then Closed" Channel.Closed (fun () ->
      ignore (Channel.recv c));
  Channel.close c

let channel_close_wakes_receivers () =
  run @@ fun () ->
  let c = Channel.create 0 in
  let rs = List.init 3 (fun _ -> fork (fun () -> Channel.recv c)) in
  settle ();
  Channel.close c;
  List.iter
    (fun r ->
      Alcotest.check_raises "receiver" Channel.Closed (fun () ->
          ignore (Fiber.join r)))
    rs

let channel_cancel () =
  run @@ fun () ->
  let c = Channel.create 0 in
  let r1 = fork (fun () -> Channel.recv c) in
  let r2 = fork (fun () -> Channel.recv c) in
  settle ();
  Fiber.cancel r1;
  Channel.send c 10;
  expect_cancelled "r1" r1;
  check_int "r2 got it" 10 (Fiber.join r2);
  let s1 = fork (fun () -> Channel.send c 1) in
  let s2 = fork (fun () -> Channel.send c 2) in
  settle ();
  Fiber.cancel s1;
  expect_cancelled "s1" s1;
  check_int "s2's value" 2 (Channel.recv c);
  Fiber.join s2;
  check_bool "s1's value never arrives" true (Channel.try_recv c = None)

(* Lazy *)

let lazy_once () =
  run @@ fun () ->
  let computed = ref 0 in
  let l =
    Lazy.from_fun (fun () ->
        incr computed;
        settle ();
        99)
  in
  let forcers = List.init 5 (fun _ -> fork (fun () -> Lazy.force l)) in
  List.iter (fun f -> check_int "value" 99 (Fiber.join f)) forcers;
  check_int "computed once" 1 !computed;
  check_bool "is_val" true (Lazy.is_val l);
  check_int "from_val" 3 (Lazy.force (Lazy.from_val 3))

let lazy_undefined () =
  run @@ fun () ->
  let self = ref None in
  let l = Lazy.from_fun (fun () -> Lazy.force (Option.get !self) + 1) in
  self := Some l;
  Alcotest.check_raises "self force" Lazy.Undefined (fun () ->
      ignore (Lazy.force l));
  Alcotest.check_raises "is Stdlib's" Stdlib.Lazy.Undefined (fun () ->
      ignore (Lazy.force l))

let lazy_exception () =
  run @@ fun () ->
  let l =
    Lazy.from_fun (fun () ->
        settle ();
        failwith "boom")
  in
  let forcers = List.init 3 (fun _ -> fork (fun () -> Lazy.force l)) in
  List.iter
    (fun f ->
      Alcotest.check_raises "waiter" (Failure "boom") (fun () ->
          ignore (Fiber.join f)))
    forcers;
  Alcotest.check_raises "later" (Failure "boom") (fun () ->
      ignore (Lazy.force l))

let lazy_cancelled_forcer () =
  run @@ fun () ->
  let attempts = ref 0 in
  let gate = Promise.create () in
  let l =
    Lazy.from_fun (fun () ->
        incr attempts;
        if !attempts = 1 then Promise.await gate;
        5)
  in
  let first = fork (fun () -> Lazy.force l) in
  settle ();
  let second = fork (fun () -> Lazy.force l) in
  settle ();
  Fiber.cancel first;
  expect_cancelled "first" first;
  check_int "second takes over" 5 (Fiber.join second);
  check_int "attempts" 2 !attempts

(* The same structures without any scheduler: systhreads park. *)
let bare_threads () =
  let m = Mvar.create_empty () in
  let c = Channel.create 0 in
  let lock = Mutex.create () in
  let count = ref 0 in
  let th =
    Thread.create
      (fun () ->
        for i = 1 to 100 do
          Mvar.put m i;
          Channel.send c i;
          Mutex.protect lock (fun () -> incr count)
        done)
      ()
  in
  let sum = ref 0 in
  for _ = 1 to 100 do
    sum := !sum + Mvar.take m + Channel.recv c;
    Mutex.protect lock (fun () -> incr count)
  done;
  Thread.join th;
  check_int "sum" 10100 !sum;
  check_int "count" 200 !count

let () =
  Test_support.Watchdog.start "test_sync";
  let tc name f = Alcotest.test_case name `Quick f in
  Alcotest.run "braid.sync"
    [
      ( "promise",
        [
          tc "fill and await" promise_basics;
          tc "error" promise_error;
          tc "cancel" promise_cancel;
        ] );
      ( "mvar",
        [
          tc "basics" mvar_basics;
          tc "fifo order" mvar_fifo_order;
          tc "blocks only the fiber" mvar_only_fiber_blocks;
          tc "cancel taker" mvar_cancel_taker;
          tc "cancel putter" mvar_cancel_putter;
          tc "cancel after commit" mvar_cancel_after_commit;
        ] );
      ( "mutex",
        [
          tc "basics" mutex_basics;
          tc "non-owner unlock" mutex_non_owner;
          tc "exclusion" mutex_exclusion;
          tc "protect on exception" mutex_protect_exn;
          tc "thesis scenario" mutex_thesis_scenario;
          tc "cancel during handoff" mutex_cancel_during_handoff;
        ] );
      ( "condition",
        [
          tc "signal and broadcast" condition_signal;
          tc "cancel" condition_cancel;
          tc "not owner" condition_not_owner;
        ] );
      ( "semaphore",
        [ tc "counting" semaphore_counting; tc "cancel" semaphore_cancel ] );
      ( "channel",
        [
          tc "buffered" channel_buffered;
          tc "rendezvous" channel_rendezvous;
          tc "close drains" channel_close;
          tc "close wakes receivers" channel_close_wakes_receivers;
          tc "cancel" channel_cancel;
        ] );
      ( "lazy",
        [
          tc "computed once" lazy_once;
          tc "undefined" lazy_undefined;
          tc "exception" lazy_exception;
          tc "cancelled forcer" lazy_cancelled_forcer;
        ] );
      ("no scheduler", [ tc "systhreads" bare_threads ]);
    ]
