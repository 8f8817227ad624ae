(* A million sleep-then-cancel cycles, and a million timeouts that do not
   fire, leave the heap flat: cancelled sleeps and finished timeouts remove
   their timers. Likewise for fibers cancelled while waiting on a socket. *)

open Braid_io
open Common

let cycles = 1_000_000
let warm_up = 10_000

(* Fewer words than this after a million cycles cannot be a per-cycle leak. *)
let allowed_growth_words = 20_000

let live_words () =
  Gc.full_major ();
  (Gc.stat ()).live_words

let flat name ?(cycles = cycles) cycle =
  for _ = 1 to warm_up do
    cycle ()
  done;
  let before = live_words () in
  for _ = 1 to cycles do
    cycle ()
  done;
  let after = live_words () in
  check_no_waiters name;
  if after - before > allowed_growth_words then
    Alcotest.failf "%s: live words grew from %d to %d over %d cycles" name
      before after cycles

let block_then_cancel block () =
  let h = Fiber.fork block in
  Fiber.yield ();
  Fiber.cancel h;
  match Fiber.join h with
  | () -> Alcotest.fail "the blocked operation completed"
  | exception Braid.Cancelled -> ()

let sleep () =
  run @@ fun () -> flat "sleep" (block_then_cancel (fun () -> Time.sleep 3600.))

let timeout () =
  run @@ fun () ->
  flat "timeout" (fun () ->
      match Time.timeout 3600. Fun.id with
      | Some () -> ()
      | None -> Alcotest.fail "timed out")

let read () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let r, _w = Fd.pipe ~sw () in
  let buf = Bytes.create 1 in
  flat "read" ~cycles:(cycles / 4)
    (block_then_cancel (fun () -> ignore (Fd.read_into r buf 0 1)))

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "timer-leak"
    [
      ( "block then cancel",
        [
          case "sleep" sleep;
          case "timeout that does not fire" timeout;
          case "read" read;
        ] );
    ]
