(* Fibers, the FIFO scheduler, switches and the Suspend contract itself. *)

open Braid
module Promise = Braid_sync.Promise
module Mvar = Braid_sync.Mvar

let run = Braid_fifo.run
let check_int = Alcotest.(check int)
let check_bool = Alcotest.(check bool)
let check_strings = Alcotest.(check (list string))

let settle () =
  for _ = 1 to 20 do
    Fiber.yield ()
  done

(* Suspend contract *)

let resumer_counts_once () =
  let saved = ref None in
  let result =
    run (fun () ->
        let h =
          Fiber.fork (fun () ->
              suspend (fun resume ->
                  saved := Some resume;
                  None))
        in
        settle ();
        let resume = Option.get !saved in
        check_bool "first call resumes" true (resume (Ok 1));
        check_bool "second call does not" false (resume (Ok 2));
        Fiber.join h)
  in
  check_int "first value" 1 result

let resumer_false_after_cancel () =
  run @@ fun () ->
  let saved = ref None in
  let h =
    Fiber.fork (fun () ->
        suspend (fun resume ->
            saved := Some resume;
            None))
  in
  settle ();
  Fiber.cancel h;
  check_bool "cancelled fiber's resumer" false ((Option.get !saved) (Ok 1));
  Alcotest.check_raises "join" Cancelled (fun () -> ignore (Fiber.join h : int))

let block_some_no_wait () =
  run @@ fun () -> check_int "immediate" 3 (suspend (fun _ -> Some 3))

let block_raises () =
  run @@ fun () ->
  Alcotest.check_raises "in a fiber" Exit (fun () ->
      suspend (fun _ -> raise Exit));
  let in_thread = ref None in
  Thread.join
    (Thread.create
       (fun () ->
         in_thread := Some (try suspend (fun _ -> raise Exit) with e -> e))
       ());
  check_bool "in a thread" true (!in_thread = Some Exit)

let error_resumption () =
  run @@ fun () ->
  let h =
    Fiber.fork (fun () ->
        suspend (fun resume ->
            ignore (resume (Error Exit));
            None))
  in
  Alcotest.check_raises "raised at the call" Exit (fun () -> Fiber.join h)

(* A bare domain parks and is resumed from a fiber on another domain. *)
let unhandled_parks () =
  let saved = Atomic.make None in
  let d =
    Domain.spawn (fun () ->
        suspend (fun resume ->
            Atomic.set saved (Some resume);
            None))
  in
  let rec wait () =
    match Atomic.get saved with
    | Some r -> r
    | None ->
        Domain.cpu_relax ();
        wait ()
  in
  let resume = wait () in
  Unix.sleepf 0.02 (* long enough for the domain to go to sleep *);
  check_bool "resumes" true (run (fun () -> resume (Ok 5)));
  check_int "bare domain got it" 5 (Domain.join d)

(* FIFO scheduler *)

let fifo_order () =
  let log = ref [] in
  run (fun () ->
      let say s () =
        log := s :: !log;
        Fiber.yield ();
        log := (s ^ "'") :: !log
      in
      let a = Fiber.fork (say "a") and b = Fiber.fork (say "b") in
      say "main" ();
      Fiber.join a;
      Fiber.join b);
  check_strings "round robin"
    [ "main"; "a"; "b"; "main'"; "a'"; "b'" ]
    (List.rev !log)

let run_waits_for_all () =
  let finished = ref false in
  run (fun () ->
      ignore
        (Fiber.fork (fun () ->
             settle ();
             finished := true)));
  check_bool "forked fiber finished before run returned" true !finished

let run_reraises_main () =
  Alcotest.check_raises "main's exception" Exit (fun () ->
      run (fun () -> raise Exit))

let unobserved_failure () =
  Alcotest.check_raises "forked failure" (Failure "lost?") (fun () ->
      run (fun () -> ignore (Fiber.fork (fun () -> failwith "lost?"))))

let observed_failure () =
  let r =
    run (fun () ->
        let h = Fiber.fork (fun () -> failwith "seen") in
        match Fiber.join h with () -> 0 | exception Failure _ -> 1)
  in
  check_int "joined failure is not re-raised" 1 r

let multiple_failures () =
  match
    run (fun () ->
        ignore (Fiber.fork (fun () -> failwith "one"));
        ignore (Fiber.fork (fun () -> failwith "two")))
  with
  | () -> Alcotest.fail "expected Multiple"
  | exception Fiber.Multiple es ->
      check_bool "both, in order" true
        (List.map fst es = [ Failure "one"; Failure "two" ])

let cancelled_fiber_is_not_a_failure () =
  run @@ fun () ->
  let h = Fiber.fork (fun () -> Mvar.take (Mvar.create_empty ())) in
  settle ();
  Fiber.cancel h

let cancel_before_start () =
  run @@ fun () ->
  let ran_to_block = ref false in
  let h =
    Fiber.fork (fun () ->
        ran_to_block := true;
        Fiber.yield ();
        Alcotest.fail "should not continue")
  in
  Fiber.cancel h;
  Alcotest.check_raises "cancelled at its first blocking call" Cancelled
    (fun () -> Fiber.join h);
  check_bool "ran until then" true !ran_to_block

let cancel_from_another_domain () =
  run @@ fun () ->
  let h = Fiber.fork (fun () -> Mvar.take (Mvar.create_empty ())) in
  settle ();
  Domain.join (Domain.spawn (fun () -> Fiber.cancel h));
  Alcotest.check_raises "woken" Cancelled (fun () -> Fiber.join h)

let protect_shields () =
  run @@ fun () ->
  let p = Promise.create () in
  let got = ref 0 in
  let h =
    Fiber.fork (fun () ->
        got := Fiber.protect (fun () -> Promise.await p);
        Fiber.check ())
  in
  settle ();
  Fiber.cancel h;
  settle ();
  check_bool "still waiting inside protect" false (Fiber.is_done h);
  Promise.fill p 3;
  Alcotest.check_raises "cancellation seen after" Cancelled (fun () ->
      Fiber.join h);
  check_int "protected wait completed" 3 !got

let fork_outside_scheduler () =
  Alcotest.check_raises "no scheduler"
    (Invalid_argument "Braid.Fiber.fork: not inside a Braid scheduler")
    (fun () -> ignore (Fiber.fork ignore))

let wake_parked_scheduler () =
  let p = Promise.create () in
  let d = Domain.spawn (fun () -> run (fun () -> Promise.await p)) in
  Unix.sleepf 0.05;
  Promise.fill p "woken";
  Alcotest.(check string) "parked scheduler woken" "woken" (Domain.join d)

(* A fiber that keeps yielding must not starve a resumption coming from
   another thread. *)
let yield_does_not_starve_other_threads () =
  run @@ fun () ->
  let p = Promise.create () in
  let woken = Atomic.make false in
  let waiter =
    Fiber.fork (fun () ->
        Promise.await p;
        Atomic.set woken true)
  in
  let filler = Thread.create (fun () -> Promise.fill p ()) () in
  let yields = ref 0 in
  while (not (Atomic.get woken)) && !yields < 10_000_000 do
    incr yields;
    Fiber.yield ()
  done;
  Thread.join filler;
  check_bool "the waiter ran while another fiber kept yielding" true
    (Atomic.get woken);
  Fiber.join waiter

let scope_cancel () =
  run @@ fun () ->
  let outcome =
    Fiber.Scope.run (fun scope ->
        let canceller = Fiber.fork (fun () -> Fiber.Scope.cancel scope) in
        match Mvar.take (Mvar.create_empty ()) with
        | () -> `Not_cancelled
        | exception Cancelled ->
            Fiber.join canceller;
            `Cancelled)
  in
  check_bool "scope interrupted the wait" true (outcome = `Cancelled);
  check_bool "outer fiber not cancelled" false (Fiber.is_cancelled ())

(* Switch *)

let switch_waits () =
  run @@ fun () ->
  let n = ref 0 in
  Switch.run (fun sw ->
      for _ = 1 to 5 do
        ignore
          (Fiber.fork ~sw (fun () ->
               settle ();
               incr n))
      done);
  check_int "all children done" 5 !n

let switch_failure_cancels_siblings () =
  run @@ fun () ->
  let sibling_cancelled = ref false in
  let released = ref false in
  Alcotest.check_raises "failure re-raised" (Failure "child") (fun () ->
      Switch.run (fun sw ->
          Switch.on_release sw (fun () -> released := true);
          ignore
            (Fiber.fork ~sw (fun () ->
                 try Mvar.take (Mvar.create_empty ())
                 with Cancelled ->
                   sibling_cancelled := true;
                   raise Cancelled));
          ignore
            (Fiber.fork ~sw (fun () ->
                 Fiber.yield ();
                 failwith "child"));
          Mvar.take (Mvar.create_empty ())));
  check_bool "sibling cancelled" true !sibling_cancelled;
  check_bool "resources released" true !released

let switch_owner_cancelled () =
  run @@ fun () ->
  let child_cancelled = ref false in
  let h =
    Fiber.fork (fun () ->
        Switch.run (fun sw ->
            ignore
              (Fiber.fork ~sw (fun () ->
                   try Mvar.take (Mvar.create_empty ())
                   with Cancelled as e ->
                     child_cancelled := true;
                     raise e))))
  in
  settle ();
  Fiber.cancel h;
  Alcotest.check_raises "owner" Cancelled (fun () -> Fiber.join h);
  check_bool "child cancelled with its owner" true !child_cancelled

let switch_nested_release_order () =
  run @@ fun () ->
  let log = ref [] in
  Switch.run (fun sw ->
      Switch.on_release sw (fun () -> log := "outer" :: !log);
      Switch.run (fun inner ->
          Switch.on_release inner (fun () -> log := "inner" :: !log));
      Switch.on_release sw (fun () -> log := "outer2" :: !log));
  check_strings "reverse order, inner first"
    [ "inner"; "outer2"; "outer" ]
    (List.rev !log)

let switch_finished () =
  run @@ fun () ->
  let saved = ref None in
  Switch.run (fun sw -> saved := Some sw);
  Alcotest.check_raises "fork into finished switch"
    (Invalid_argument "Braid.Switch.fork: the switch has finished") (fun () ->
      ignore (Switch.fork (Option.get !saved) ignore))

let () =
  Test_support.Watchdog.start "test_core";
  let tc name f = Alcotest.test_case name `Quick f in
  Alcotest.run "braid"
    [
      ( "suspend",
        [
          tc "resumer counts once" resumer_counts_once;
          tc "resumer false after cancel" resumer_false_after_cancel;
          tc "block returns Some" block_some_no_wait;
          tc "block raises" block_raises;
          tc "error resumption" error_resumption;
          tc "unhandled parks the domain" unhandled_parks;
        ] );
      ( "fifo",
        [
          tc "fifo order" fifo_order;
          tc "run waits for all fibers" run_waits_for_all;
          tc "run re-raises main's exception" run_reraises_main;
          tc "unobserved failure re-raised" unobserved_failure;
          tc "observed failure not re-raised" observed_failure;
          tc "multiple failures" multiple_failures;
          tc "wake a parked scheduler" wake_parked_scheduler;
          tc "yielding does not starve other threads"
            yield_does_not_starve_other_threads;
        ] );
      ( "fiber",
        [
          tc "cancelled fiber is no failure" cancelled_fiber_is_not_a_failure;
          tc "cancel before start" cancel_before_start;
          tc "cancel from another domain" cancel_from_another_domain;
          tc "protect shields" protect_shields;
          tc "fork outside a scheduler" fork_outside_scheduler;
          tc "scope cancel" scope_cancel;
        ] );
      ( "switch",
        [
          tc "waits for children" switch_waits;
          tc "failure cancels siblings" switch_failure_cancels_siblings;
          tc "owner cancelled" switch_owner_cancelled;
          tc "release order" switch_nested_release_order;
          tc "finished switch" switch_finished;
        ] );
    ]
