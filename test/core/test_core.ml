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

(* Combinators, stop, removable releases, the printer of Cancelled. *)

let both_returns_both () =
  let a, b =
    run (fun () ->
        Fiber.both
          (fun () ->
            Fiber.yield ();
            1)
          (fun () -> "two"))
  in
  check_int "first" 1 a;
  Alcotest.(check string) "second" "two" b

let both_cancels_on_failure () =
  let other_cancelled = ref false in
  match
    run (fun () ->
        Fiber.both
          (fun () ->
            try Promise.await (Promise.create ())
            with Cancelled ->
              other_cancelled := true;
              raise Cancelled)
          (fun () ->
            settle ();
            failwith "g"))
  with
  | _ -> Alcotest.fail "expected the failure"
  | exception Failure g ->
      Alcotest.(check string) "the failure" "g" g;
      check_bool "the other was cancelled" true !other_cancelled

let never () = Promise.await (Promise.create ())

let any_first_wins () =
  let losers_cancelled = ref 0 in
  let loser () =
    try never ()
    with Cancelled ->
      incr losers_cancelled;
      raise Cancelled
  in
  let v =
    run (fun () ->
        Fiber.any
          [
            loser;
            (fun () ->
              settle ();
              "winner");
            loser;
          ])
  in
  Alcotest.(check string) "the first to return" "winner" v;
  check_int "losers cancelled and waited for" 2 !losers_cancelled;
  check_int "first" 3 (run (fun () -> Fiber.first (fun () -> 3) never));
  Alcotest.check_raises "no function"
    (Invalid_argument "Braid.Fiber.any: no function") (fun () ->
      run (fun () -> Fiber.any []))

let all_runs_all () =
  let ran = ref 0 in
  run (fun () ->
      Fiber.all
        (List.init 5 (fun _ () ->
             Fiber.yield ();
             incr ran)));
  check_int "all ran" 5 !ran

let switch_stop () =
  let fiber_cancelled = ref false in
  let result =
    run (fun () ->
        Switch.run_stoppable (fun sw ->
            let _ =
              Switch.fork sw (fun () ->
                  try never () with Cancelled -> fiber_cancelled := true)
            in
            let _ = Switch.fork sw (fun () -> Switch.stop sw) in
            never ()))
  in
  check_bool "stopped: no value" true (result = None);
  check_bool "its fiber cancelled" true !fiber_cancelled;
  check_int "a body that returns keeps its value" 42
    (run (fun () ->
         Switch.run (fun sw ->
             Switch.stop sw;
             42)))

let switch_remove_release () =
  let released = ref [] in
  run (fun () ->
      Switch.run (fun sw ->
          Switch.on_release sw (fun () -> released := "a" :: !released);
          let hook =
            Switch.on_release_removable sw (fun () ->
                released := "removed" :: !released)
          in
          Switch.on_release sw (fun () -> released := "c" :: !released);
          Switch.remove_release hook;
          Switch.remove_release hook));
  check_strings "newest first, removed one never" [ "c"; "a" ]
    (List.rev !released)

let cancelled_prints () =
  Alcotest.(check string)
    "printer" "Braid.Cancelled"
    (Printexc.to_string Cancelled)

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
          tc "stop" switch_stop;
          tc "removable release" switch_remove_release;
        ] );
      ( "combinators",
        [
          tc "both" both_returns_both;
          tc "both: a failure cancels the other" both_cancels_on_failure;
          tc "any and first" any_first_wins;
          tc "all" all_runs_all;
          tc "Cancelled prints as such" cancelled_prints;
        ] );
    ]
