(* Fibers waiting for SIGHUP, SIGTERM and SIGINT, sent by the process to
   itself. *)

open Braid_io
open Common

let self_kill signal = Unix.kill (Unix.getpid ()) signal

let name s =
  if s = Sys.sighup then "SIGHUP"
  else if s = Sys.sigterm then "SIGTERM"
  else if s = Sys.sigint then "SIGINT"
  else string_of_int s

let signal = Alcotest.testable (Fmt.of_to_string name) ( = )

let each_signal_is_seen () =
  run @@ fun () ->
  within "signals" @@ fun () ->
  Switch.run @@ fun sw ->
  let sub = Signal.subscribe ~sw [ Sys.sighup; Sys.sigterm; Sys.sigint ] in
  List.iter
    (fun s ->
      self_kill s;
      Alcotest.check signal "delivered" s (Signal.wait sub))
    [ Sys.sighup; Sys.sigterm; Sys.sigint ]

(* The loop is asleep in epoll_wait when another domain sends the signal. *)
let wakes_a_sleeping_loop () =
  run @@ fun () ->
  within "sleeping loop" @@ fun () ->
  Switch.run @@ fun sw ->
  let sub = Signal.subscribe ~sw [ Sys.sigterm ] in
  let waiter = Fiber.fork ~sw (fun () -> Signal.wait sub) in
  settle ();
  Alcotest.(check int) "the fiber waits" 1 (Braid_io.stats ()).signal_waiters;
  let sender =
    Domain.spawn (fun () ->
        Unix.sleepf 0.01;
        self_kill Sys.sigterm)
  in
  Alcotest.check signal "woken" Sys.sigterm (Fiber.join waiter);
  Domain.join sender

(* Sent while nobody waits, but subscribed: kept for the next wait. Two
   deliveries in between count as one, like Unix signals. *)
let kept_until_waited () =
  run @@ fun () ->
  within "pending" @@ fun () ->
  Switch.run @@ fun sw ->
  let sub = Signal.subscribe ~sw [ Sys.sighup ] in
  self_kill Sys.sighup;
  self_kill Sys.sighup;
  Time.sleep 0.001;
  Alcotest.check signal "the pending delivery" Sys.sighup (Signal.wait sub);
  Alcotest.(check (option signal))
    "nothing more" None
    (Time.timeout 0.02 (fun () -> Signal.wait sub))

let cancelled_wait () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let sub = Signal.subscribe ~sw [ Sys.sighup ] in
  let waiter = Fiber.fork ~sw (fun () -> Signal.wait sub) in
  settle ();
  Fiber.cancel waiter;
  (match Fiber.join waiter with
  | _ -> Alcotest.fail "the cancelled wait returned"
  | exception Braid.Cancelled -> ());
  Alcotest.(check int) "no waiter left" 0 (Braid_io.stats ()).signal_waiters

(* Every loop subscribed to a signal sees each delivery. *)
let every_loop_sees_it () =
  let subscribed = Braid_sync.Promise.create () in
  let got =
    run_domains ~domains:2 @@ fun ~domain ->
    within "two loops" @@ fun () ->
    Switch.run @@ fun sw ->
    let sub = Signal.subscribe ~sw [ Sys.sigint ] in
    if domain = 1 then Braid_sync.Promise.fill subscribed ()
    else (
      Braid_sync.Promise.await subscribed;
      self_kill Sys.sigint);
    Signal.wait sub
  in
  Alcotest.(check (list signal)) "both loops" [ Sys.sigint; Sys.sigint ] got

(* Braid's handler is only in place while subscribed: the previous OCaml
   handler comes back after. *)
let restores_the_previous_handler () =
  let handled = Atomic.make 0 in
  let previous =
    Sys.signal Sys.sigusr1 (Sys.Signal_handle (fun _ -> Atomic.incr handled))
  in
  Fun.protect ~finally:(fun () -> Sys.set_signal Sys.sigusr1 previous)
  @@ fun () ->
  run (fun () ->
      Alcotest.check signal "Braid's handler" Sys.sigusr1
        (Switch.run (fun sw ->
             let sub = Signal.subscribe ~sw [ Sys.sigusr1 ] in
             self_kill Sys.sigusr1;
             Signal.wait sub)));
  Alcotest.(check int) "the OCaml handler was bypassed" 0 (Atomic.get handled);
  self_kill Sys.sigusr1;
  (* OCaml handlers run at the next safepoint. *)
  let rec poll n =
    if Atomic.get handled = 0 && n > 0 then (
      ignore (Sys.opaque_identity (Array.make 10 n));
      Unix.sleepf 0.001;
      poll (n - 1))
  in
  poll 10_000;
  Alcotest.(check int) "the OCaml handler is back" 1 (Atomic.get handled)

let await_once () =
  run @@ fun () ->
  within "await" @@ fun () ->
  let waiter =
    Fiber.fork (fun () -> Signal.await [ Sys.sighup; Sys.sigterm ])
  in
  settle ();
  self_kill Sys.sigterm;
  Alcotest.check signal "await" Sys.sigterm (Fiber.join waiter)

let uncatchable () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  match Signal.subscribe ~sw [ Sys.sigkill ] with
  | _ -> Alcotest.fail "subscribed to SIGKILL"
  | exception Invalid_argument _ -> ()

(* Deliveries while fibers run OCaml code on their own small stacks: the C
   handler must run on the thread's alternate signal stack, or its frame
   overwrites whatever lies below the fiber's stack (this crashed the braid
   binary under SIGHUP reloads). A shell sends the signals, so they land at
   any point of the fibers' work. *)
let deliveries_during_fiber_work () =
  let rec sum n = if n = 0 then 0 else n + sum (n - 1) in
  let wrong = ref 0 in
  let deliveries = 20_000 in
  run (fun () ->
      Switch.run @@ fun sw ->
      let sub = Signal.subscribe ~sw [ Sys.sigusr1 ] in
      let stop = ref false in
      for _ = 1 to 50 do
        ignore
          (Fiber.fork ~sw (fun () ->
               while not !stop do
                 if sum 50 <> 1275 then incr wrong;
                 ignore (Sys.opaque_identity (List.init 10 Fun.id));
                 Fiber.yield ()
               done))
      done;
      let script =
        Printf.sprintf
          "i=0; while [ $i -lt %d ]; do kill -USR1 %d; i=$((i+1)); done"
          deliveries (Unix.getpid ())
      in
      let sender =
        Unix.create_process "sh" [| "sh"; "-c"; script |] Unix.stdin Unix.stdout
          Unix.stderr
      in
      let rec wait_sender () =
        match Unix.waitpid [ WNOHANG ] sender with
        | 0, _ ->
            Time.sleep 0.005;
            wait_sender ()
        | _, WEXITED 0 -> ()
        | _ -> Alcotest.fail "the sender failed"
      in
      wait_sender ();
      Alcotest.check signal "delivered" Sys.sigusr1 (Signal.wait sub);
      stop := true);
  Gc.full_major ();
  Alcotest.(check int) "every computation right" 0 !wrong

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "signal"
    [
      ( "signals",
        [
          case "SIGHUP, SIGTERM and SIGINT" each_signal_is_seen;
          case "wakes a sleeping loop" wakes_a_sleeping_loop;
          case "kept until waited for" kept_until_waited;
          case "a cancelled wait" cancelled_wait;
          case "every subscribed loop" every_loop_sees_it;
          case "the previous handler comes back" restores_the_previous_handler;
          case "await" await_once;
          case "SIGKILL cannot be caught" uncatchable;
          case "deliveries during fiber work" deliveries_during_fiber_work;
        ] );
    ]
