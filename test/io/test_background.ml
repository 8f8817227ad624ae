(* Braid_io.yield_background: fibers waiting there run behind the others, a
   few per turn of the loop, never starved, and cancellable. *)

open Braid_io

(* The contract's bound ([Braid_io.yield_background]): at most this many
   waiting fibers go on at each turn. *)
let per_turn = 4

(* [n] fibers wait in yield_background while another fiber takes three turns
   of the loop (each [Fiber.yield] is one): it gets them with at most
   [per_turn] of the others run at each, not after all of them; then the
   others all run within a turn each per [per_turn] of them. *)
let behind_the_others () =
  Braid_io.run @@ fun () ->
  let n = 40 and ran = ref 0 in
  let waiting =
    List.init n (fun _ ->
        Fiber.fork (fun () ->
            yield_background ();
            incr ran))
  in
  (* The forked fibers run now, to their yield_background. *)
  Fiber.yield ();
  Alcotest.(check int) "none ran before its turn" 0 !ran;
  Fiber.yield ();
  Fiber.yield ();
  Fiber.yield ();
  Alcotest.(check bool)
    (Printf.sprintf "after three turns, %d of %d ran (at most %d)" !ran n
       (3 * per_turn))
    true
    (!ran <= 3 * per_turn);
  let turns = ref 0 in
  while !ran < n && !turns < n do
    incr turns;
    Fiber.yield ()
  done;
  Alcotest.(check int) "all ran, a few per turn" n !ran;
  Alcotest.(check bool)
    (Printf.sprintf "in %d more turns" !turns)
    true
    (!turns <= (n / per_turn) + 1);
  List.iter Fiber.join waiting

(* A fiber alone in yield_background is not left waiting in epoll for an
   event that will never come. The watchdog is a systhread: a timer of the
   loop's would end the wait by itself. *)
let alone () =
  let finished = Atomic.make false in
  let watchdog =
    Thread.create
      (fun () ->
        let deadline = Unix.gettimeofday () +. 10. in
        while (not (Atomic.get finished)) && Unix.gettimeofday () < deadline do
          Thread.delay 0.01
        done;
        if not (Atomic.get finished) then (
          prerr_endline "yield_background alone: still waiting after 10 s";
          exit 1))
      ()
  in
  Braid_io.run (fun () ->
      for _ = 1 to 3 do
        yield_background ()
      done);
  Atomic.set finished true;
  Thread.join watchdog

(* A cancelled fiber leaves its wait at once, before those queued ahead of
   it; the loop then finishes the others. *)
let cancelled () =
  Braid_io.run @@ fun () ->
  let ran = ref 0 in
  let ahead =
    List.init 20 (fun _ ->
        Fiber.fork (fun () ->
            yield_background ();
            incr ran))
  in
  let victim = Fiber.fork yield_background in
  Fiber.yield ();
  Fiber.cancel victim;
  (match Fiber.join victim with
  | () -> Alcotest.fail "a cancelled yield_background returned"
  | exception Braid.Cancelled -> ());
  Alcotest.(check bool) "before those ahead of it" true (!ran < 20);
  List.iter Fiber.join ahead;
  Alcotest.(check int) "the others ran" 20 !ran

let outside () =
  match yield_background () with
  | () -> Alcotest.fail "yield_background outside a loop returned"
  | exception Invalid_argument _ -> ()

let () =
  Alcotest.run "background"
    [
      ( "yield_background",
        [
          Alcotest.test_case "behind the others, a few per turn" `Quick
            behind_the_others;
          Alcotest.test_case "alone, no event to wait for" `Quick alone;
          Alcotest.test_case "cancelled while waiting" `Quick cancelled;
          Alcotest.test_case "outside a loop" `Quick outside;
        ] );
    ]
