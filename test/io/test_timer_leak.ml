(* A million sleep-then-cancel cycles, and a million timeouts that do not
   fire, leave the heap flat: cancelled sleeps and finished timeouts remove
   their timers. Likewise for fibers cancelled while waiting on a socket. *)

open Braid_io
open Common

let cycles = 1_000_000

let flat name ?(cycles = cycles) cycle =
  Test_support.Leak.stays_flat ~cycles name cycle;
  check_no_waiters name

let block_then_cancel block () = Test_support.Leak.block_then_cancel block

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
