(* Sleeping and Marlow's timeout: nested timeouts fire in deadline order, the
   work unwinds its resources, and an outer cancellation is not mistaken for
   a timeout. Assertions are on the order of events, never on durations. *)

open Braid_io
open Common

(* Three nested timeouts with deadlines [outer], [middle], [inner] (seconds
   from now); the innermost work sleeps forever. Each level records when its
   timeout returned None, when its work was cancelled, and its cleanup. *)
let nested ~outer ~middle ~inner =
  let events = ref [] in
  let note e = events := e :: !events in
  let level name seconds work () =
    match
      Time.timeout seconds (fun () ->
          Fun.protect
            ~finally:(fun () -> note (name ^ " cleanup"))
            (fun () ->
              work ();
              (* The work carries on after an inner timeout, until its own. *)
              Time.sleep 3600.))
    with
    | Some () -> note (name ^ " returned")
    | None -> note (name ^ " timed out")
    | exception Braid.Cancelled ->
        note (name ^ " cancelled");
        raise Braid.Cancelled
  in
  run (fun () ->
      within "nested timeouts" (fun () ->
          level "outer" outer
            (level "middle" middle (level "inner" inner ignore))
            ();
          check_no_waiters "after the timeouts"));
  List.rev !events

let innermost_first () =
  Alcotest.(check (list string))
    "inner, then middle, then outer"
    [
      "inner cleanup";
      "inner timed out";
      "middle cleanup";
      "middle timed out";
      "outer cleanup";
      "outer timed out";
    ]
    (nested ~outer:0.3 ~middle:0.2 ~inner:0.1)

let outermost_first () =
  Alcotest.(check (list string))
    "the outer timeout cancels both inner levels"
    [
      "inner cleanup";
      "inner cancelled";
      "middle cleanup";
      "middle cancelled";
      "outer cleanup";
      "outer timed out";
    ]
    (nested ~outer:0.1 ~middle:0.2 ~inner:0.3)

let middle_first () =
  Alcotest.(check (list string))
    "the middle timeout cancels the inner level only"
    [
      "inner cleanup";
      "inner cancelled";
      "middle cleanup";
      "middle timed out";
      "outer cleanup";
      "outer timed out";
    ]
    (nested ~outer:0.3 ~middle:0.1 ~inner:0.2)

let work_that_finishes () =
  run @@ fun () ->
  Alcotest.(check (option int))
    "in time" (Some 42)
    (Time.timeout 3600. (fun () ->
         Time.sleep 0.001;
         42));
  Alcotest.(check (option int))
    "never blocks" (Some 7)
    (Time.timeout 0. (fun () -> 7));
  check_no_waiters "finished timeouts remove their timers"

exception Oops

let work_that_raises () =
  run @@ fun () ->
  Alcotest.check_raises "the work's exception" Oops (fun () ->
      ignore
        (Time.timeout 3600. (fun () ->
             Time.sleep 0.001;
             raise Oops)));
  check_no_waiters "a failed timeout removes its timer"

(* A timed-out connection's switch closes its socket before [timeout]
   returns; the loop forgets the descriptor. *)
let unwinds_resources () =
  run @@ fun () ->
  within "unwind" @@ fun () ->
  Switch.run @@ fun sw ->
  (* Nobody accepts: the kernel completes the handshake, nothing is sent. *)
  let listener = Net.listen ~sw loopback in
  let fds = (Braid_io.stats ()).open_fds in
  let socket = ref None in
  let result =
    Time.timeout 0.05 (fun () ->
        Switch.run (fun sw ->
            let s = Net.connect ~sw (Net.local_addr listener) in
            socket := Some s;
            Net.read_into s (Bytes.create 1) 0 1))
  in
  Alcotest.(check (option int)) "timed out" None result;
  (match !socket with
  | Some s -> Alcotest.(check bool) "socket closed" false (Fd.is_open s)
  | None -> Alcotest.fail "never connected");
  Alcotest.(check int) "descriptor released" fds (Braid_io.stats ()).open_fds;
  check_no_waiters "after the timeout"

(* Cancelled from outside while inside a timeout: Cancelled, not None. *)
let outer_cancellation_wins () =
  run @@ fun () ->
  let h =
    Fiber.fork (fun () -> Time.timeout 3600. (fun () -> Time.sleep 3600.))
  in
  settle ();
  Fiber.cancel h;
  (match Fiber.join h with
  | _ -> Alcotest.fail "the cancelled fiber returned"
  | exception Braid.Cancelled -> ());
  check_no_waiters "after cancelling"

(* The timeout's own deadline passed, and the enclosing scope was cancelled
   too before the work noticed: the enclosing cancellation wins, [timeout]
   raises instead of returning None. *)
let both_cancelled () =
  run @@ fun () ->
  let outcome =
    Fiber.Scope.run (fun outer ->
        match
          Time.timeout 0.01 (fun () ->
              (* Shielded: the timeout fires during this sleep, unnoticed. *)
              Fiber.protect (fun () ->
                  Time.sleep 0.05;
                  Fiber.Scope.cancel outer);
              Time.sleep 3600.)
        with
        | Some () -> "returned"
        | None -> "timed out"
        | exception Braid.Cancelled -> "cancelled")
  in
  Alcotest.(check string) "the enclosing cancellation" "cancelled" outcome;
  check_no_waiters "after both"

(* Sleepers wake in deadline order, whatever order they started in. *)
let sleep_order () =
  run @@ fun () ->
  let woke = ref [] in
  Switch.run (fun sw ->
      List.iter
        (fun ms ->
          ignore
            (Fiber.fork ~sw (fun () ->
                 Time.sleep (float ms /. 1000.);
                 woke := ms :: !woke)))
        [ 50; 10; 40; 20; 30; 0 ]);
  Alcotest.(check (list int))
    "by deadline" [ 0; 10; 20; 30; 40; 50 ] (List.rev !woke)

let now_is_monotonic () =
  run @@ fun () ->
  let t0 = Time.now () in
  Time.sleep 0.01;
  let t1 = Time.now () in
  Alcotest.(check bool)
    "time went forward by the sleep at least" true
    (Mtime.Span.to_float_ns (Mtime.span t0 t1) >= 0.01 *. 1e9
    && Mtime.is_later t1 ~than:t0)

(* The unboxed reading is mtime's clock: a reading taken between two of
   mtime's lies between them. *)
let now_ns_is_mtimes_clock () =
  for _ = 1 to 1000 do
    let before = Mtime.to_uint64_ns (Time.now ()) in
    let ns = Time.now_ns () in
    let after = Mtime.to_uint64_ns (Time.now ()) in
    if not (Int64.to_int before <= ns && ns <= Int64.to_int after) then
      Alcotest.failf "%Ld <= %d <= %Ld does not hold" before ns after
  done

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "time"
    [
      ( "nested timeouts",
        [
          case "innermost deadline first" innermost_first;
          case "outermost deadline first" outermost_first;
          case "middle deadline first" middle_first;
        ] );
      ( "timeout",
        [
          case "work that finishes" work_that_finishes;
          case "work that raises" work_that_raises;
          case "unwinds the work's resources" unwinds_resources;
          case "outer cancellation is not a timeout" outer_cancellation_wins;
          case "timed out and cancelled from outside" both_cancelled;
        ] );
      ( "sleep",
        [
          case "wakes in deadline order" sleep_order;
          case "now" now_is_monotonic;
          case "now_ns reads the same clock" now_ns_is_mtimes_clock;
        ] );
    ]
