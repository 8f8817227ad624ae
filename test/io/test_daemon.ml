(* Braid_io.current_loop and Braid_io.fork_daemon: a loop as a key, and
   fibers that serve a loop without keeping it running. *)

open Braid_io

(* A daemon that waits for ever does not keep [run] from returning: it is
   cancelled once the main fiber and a detached fiber that outlives it have
   both finished, not before, and its clean-up (which sleeps: blocking calls
   work while it unwinds, shielded) runs before [run] returns. *)
let ends_with_the_loop () =
  let events = ref [] in
  let note e = events := e :: !events in
  Braid_io.run (fun () ->
      fork_daemon (fun () ->
          match Time.sleep Float.infinity with
          | () -> note "daemon woke up"
          | exception Braid.Cancelled ->
              note "daemon cancelled";
              Fiber.protect (fun () -> Time.sleep 0.01);
              note "daemon cleaned up");
      ignore
        (Fiber.fork (fun () ->
             Time.sleep 0.05;
             note "detached fiber done"));
      note "main done");
  Alcotest.(check (list string))
    "in order"
    [
      "main done";
      "detached fiber done";
      "daemon cancelled";
      "daemon cleaned up";
    ]
    (List.rev !events)

(* A daemon forked by a daemon that is unwinding is cancelled as well: the
   loop ends. Bounded by a watchdog thread, since a loop that never ends
   would hang the test. *)
let forked_while_unwinding () =
  let finished = Atomic.make false in
  let second_cancelled = ref false in
  let watchdog =
    Thread.create
      (fun () ->
        let deadline = Unix.gettimeofday () +. 10. in
        while (not (Atomic.get finished)) && Unix.gettimeofday () < deadline do
          Thread.delay 0.01
        done;
        if not (Atomic.get finished) then (
          prerr_endline "fork_daemon: the loop did not end within 10 s";
          exit 1))
      ()
  in
  Braid_io.run (fun () ->
      fork_daemon (fun () ->
          Fun.protect
            ~finally:(fun () ->
              fork_daemon (fun () ->
                  try Time.sleep Float.infinity
                  with Braid.Cancelled -> second_cancelled := true))
            (fun () -> Time.sleep Float.infinity)));
  Atomic.set finished true;
  Thread.join watchdog;
  Alcotest.(check bool) "the second daemon was cancelled" true !second_cancelled

exception Daemon_failed

(* A daemon's failure is not lost: [run] re-raises it. Its cancellation at
   the end is not a failure. *)
let failure_reported () =
  Alcotest.check_raises "the daemon's exception" Daemon_failed (fun () ->
      Braid_io.run (fun () ->
          fork_daemon (fun () -> raise Daemon_failed);
          Fiber.yield ()));
  Braid_io.run (fun () -> fork_daemon (fun () -> Time.sleep Float.infinity))

(* The daemon runs in the context [run] was called in, not its forker's. *)
let request_key : string Fiber.key = Fiber.create_key ()

let context_of_run () =
  let seen = ref (Some "not run") in
  Braid_io.run (fun () ->
      Fiber.with_binding request_key "request 1" (fun () ->
          fork_daemon (fun () -> seen := Fiber.get request_key));
      Fiber.yield ());
  Alcotest.(check (option string)) "no binding of the forker's" None !seen

(* One loop is one value, from any of its fibers; two loops (one after the
   other on the same domain, or on two domains) are two. *)
let loop_identity () =
  let first =
    Braid_io.run (fun () ->
        let here = current_loop () in
        let other = Fiber.join (Fiber.fork current_loop) in
        Alcotest.(check bool) "same loop from two fibers" true (here == other);
        here)
  in
  let second = Braid_io.run current_loop in
  Alcotest.(check bool) "a later loop on this domain" false (first == second);
  match Braid_io.run_domains ~domains:2 (fun ~domain:_ -> current_loop ()) with
  | [ a; b ] -> Alcotest.(check bool) "two domains" false (a == b)
  | _ -> Alcotest.fail "two results"

let outside_a_loop () =
  Alcotest.check_raises "current_loop"
    (Invalid_argument
       "Braid_io.current_loop: must be called from a fiber of Braid_io.run")
    (fun () -> ignore (current_loop ()));
  Alcotest.check_raises "fork_daemon"
    (Invalid_argument
       "Braid_io.fork_daemon: must be called from a fiber of Braid_io.run")
    (fun () -> fork_daemon ignore)

let () =
  Alcotest.run "braid_io daemons"
    [
      ( "fork_daemon",
        [
          Alcotest.test_case "ends with the loop" `Quick ends_with_the_loop;
          Alcotest.test_case "forked while unwinding" `Quick
            forked_while_unwinding;
          Alcotest.test_case "failure reported" `Quick failure_reported;
          Alcotest.test_case "context of run" `Quick context_of_run;
        ] );
      ( "current_loop",
        [
          Alcotest.test_case "identity" `Quick loop_identity;
          Alcotest.test_case "outside a loop" `Quick outside_a_loop;
        ] );
    ]
