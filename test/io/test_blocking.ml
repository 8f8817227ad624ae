(* The pool of threads for blocking calls: results, exceptions, a loop that
   keeps running meanwhile, cancellation (queued and running calls), and every
   kind of caller. *)

open Braid_io
open Common
module Gate = Test_support.Gate

let with_pool ?max_threads f =
  let pool = Blocking.create ?max_threads () in
  Fun.protect ~finally:(fun () -> Blocking.shutdown pool) (fun () -> f pool)

let results_and_exceptions () =
  with_pool @@ fun pool ->
  run @@ fun () ->
  Alcotest.(check int) "value" 42 (Blocking.run ~pool (fun () -> 6 * 7));
  Alcotest.check_raises "exception" (Failure "from the pool") (fun () ->
      Blocking.run ~pool (fun () -> failwith "from the pool"));
  Alcotest.(check bool)
    "ran on another domain" true
    (Blocking.run ~pool (fun () -> Domain.self ()) <> Domain.self ())

(* 64 calls that each block 50 ms, 16 at a time, while a ticker fiber ticks
   every 2 ms: the loop never waits for a call. The stall bound (250 ms) is
   generous for a loaded machine and far below the 200 ms the calls would take
   if they ran on the loop's thread. *)
let loop_keeps_running () =
  with_pool ~max_threads:16 @@ fun pool ->
  run @@ fun () ->
  within "64 slow calls" @@ fun () ->
  let sum, longest =
    with_ticker @@ fun () ->
    Switch.run @@ fun sw ->
    let calls =
      List.init 64 (fun i ->
          Fiber.fork ~sw (fun () ->
              Blocking.run ~pool (fun () ->
                  Unix.sleepf 0.05;
                  i)))
    in
    List.fold_left (fun acc c -> acc + Fiber.join c) 0 calls
  in
  Alcotest.(check int) "every result" (63 * 64 / 2) sum;
  check_no_stall ~bound_ms:250 longest;
  let s = Blocking.stats pool in
  Alcotest.(check int) "threads started" 16 s.threads;
  Alcotest.(check (pair int int))
    "nothing busy or queued" (0, 0) (s.busy, s.queued)

(* A fiber cancelled while its call runs is woken at once (the call is still
   blocked at the gate), and the call's result goes to [dispose]. *)
let cancel_running () =
  with_pool @@ fun pool ->
  run @@ fun () ->
  let gate = Gate.create () and disposed = Atomic.make 0 in
  Switch.run @@ fun sw ->
  let caller =
    Fiber.fork ~sw (fun () ->
        match
          Blocking.run ~pool ~dispose:(Atomic.set disposed) (fun () ->
              Gate.wait gate;
              7)
        with
        | _ -> "returned"
        | exception Braid.Cancelled -> "cancelled")
  in
  eventually "the call starts" (fun () -> (Blocking.stats pool).busy = 1);
  Fiber.cancel caller;
  Alcotest.(check string) "woken at once" "cancelled" (Fiber.join caller);
  Alcotest.(check int) "not disposed yet" 0 (Atomic.get disposed);
  Gate.open_ gate;
  eventually "disposed" (fun () -> Atomic.get disposed = 7)

(* A call still queued when its fiber is cancelled never starts. *)
let cancel_queued () =
  with_pool ~max_threads:1 @@ fun pool ->
  run @@ fun () ->
  let gate = Gate.create () and started = Atomic.make false in
  Switch.run @@ fun sw ->
  let first =
    Fiber.fork ~sw (fun () -> Blocking.run ~pool (fun () -> Gate.wait gate))
  in
  eventually "the first call starts" (fun () -> (Blocking.stats pool).busy = 1);
  let second =
    Fiber.fork ~sw (fun () ->
        match Blocking.run ~pool (fun () -> Atomic.set started true) with
        | () -> "returned"
        | exception Braid.Cancelled -> "cancelled")
  in
  eventually "the second call queued" (fun () ->
      (Blocking.stats pool).queued = 1);
  Fiber.cancel second;
  Alcotest.(check string) "woken at once" "cancelled" (Fiber.join second);
  Gate.open_ gate;
  Fiber.join first;
  (* One thread, calls in order: a third call ends after the second would. *)
  Blocking.run ~pool ignore;
  Alcotest.(check bool)
    "the cancelled call never ran" false (Atomic.get started)

(* A descriptor opened by a call whose caller gave up is closed, and a
   timeout around the call cancels it like any blocking call. *)
let no_fd_leak () =
  with_pool @@ fun pool ->
  let before_loop = open_fds () in
  run (fun () ->
      let before = open_fds () in
      let gate = Gate.create () in
      let outcome =
        Time.timeout 0.01 (fun () ->
            Blocking.run ~pool ~dispose:Unix.close (fun () ->
                Gate.wait gate;
                Unix.openfile "/dev/null" [ O_RDONLY; O_CLOEXEC ] 0))
      in
      Alcotest.(check bool) "timed out" true (outcome = None);
      Gate.open_ gate;
      eventually "the late descriptor closed" (fun () ->
          (Blocking.stats pool).busy = 0 && open_fds () = before));
  Alcotest.(check int) "descriptors after the loop" before_loop (open_fds ())

(* The same call from a bare thread, a pool of domains, and two loops. *)
let every_caller () =
  with_pool @@ fun pool ->
  let call () = Blocking.run ~pool (fun () -> 1) in
  Alcotest.(check int) "bare thread" 1 (call ());
  let from_thread = ref 0 in
  Thread.join (Thread.create (fun () -> from_thread := call ()) ());
  Alcotest.(check int) "systhread" 1 !from_thread;
  Alcotest.(check (list int))
    "two loops" [ 1; 1 ]
    (run_domains ~domains:2 (fun ~domain:_ -> call ()))

(* Fibers forked below [with_pool] use its pool; others the shared one. *)
let pool_follows_the_fiber () =
  with_pool @@ fun pool ->
  run @@ fun () ->
  Alcotest.(check bool)
    "shared by default" true
    (Blocking.current () == Blocking.shared ());
  Blocking.with_pool pool (fun () ->
      Switch.run @@ fun sw ->
      let child = Fiber.fork ~sw (fun () -> Blocking.current () == pool) in
      Alcotest.(check bool) "a forked fiber inherits it" true (Fiber.join child))

let shut_down () =
  let pool = Blocking.create () in
  Alcotest.(check int) "a call" 3 (Blocking.run ~pool (fun () -> 3));
  Blocking.shutdown pool;
  Blocking.shutdown pool;
  Alcotest.(check int) "no thread left" 0 (Blocking.stats pool).threads;
  Alcotest.check_raises "refused after"
    (Invalid_argument "Blocking.run: the pool was shut down") (fun () ->
      Blocking.run ~pool ignore)

let () =
  Alcotest.run "blocking"
    [
      ( "pool",
        [
          Alcotest.test_case "results and exceptions" `Quick
            results_and_exceptions;
          Alcotest.test_case "the loop keeps running" `Quick loop_keeps_running;
          Alcotest.test_case "cancel a running call" `Quick cancel_running;
          Alcotest.test_case "cancel a queued call" `Quick cancel_queued;
          Alcotest.test_case "no descriptor leak" `Quick no_fd_leak;
          Alcotest.test_case "every caller" `Quick every_caller;
          Alcotest.test_case "the pool follows the fiber" `Quick
            pool_follows_the_fiber;
          Alcotest.test_case "shutdown" `Quick shut_down;
        ] );
    ]
