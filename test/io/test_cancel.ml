(* Cancelling fibers blocked in accept, read, write and sleep wakes them at
   once and leaves no epoll or timer registration behind; switches cancel
   siblings on failure and close their sockets. *)

open Braid_io
open Common

let expect_cancelled name h =
  match Fiber.join h with
  | _ -> Alcotest.failf "%s: finished instead of being cancelled" name
  | exception Braid.Cancelled -> ()

(* [blocked] must block; it runs in a fiber that is then cancelled. *)
let cancel_while_blocked name ~waiting blocked =
  let h = Fiber.fork blocked in
  (* On io_uring a large write goes in several operations, each a turn of
     the loop, before the socket is full and the writer waits. *)
  let rec until_waiting n =
    settle ();
    if waiters () <> waiting && n > 0 then until_waiting (n - 1)
  in
  until_waiting 100;
  Alcotest.(check (pair int int)) (name ^ " is registered") waiting (waiters ());
  Fiber.cancel h;
  expect_cancelled name h;
  check_no_waiters name

let pair ~sw =
  let listener = Net.listen ~sw loopback in
  let accepted = Fiber.fork ~sw (fun () -> fst (Net.accept ~sw listener)) in
  let client = Net.connect ~sw (Net.local_addr listener) in
  (listener, client, Fiber.join accepted)

let accept () =
  run @@ fun () ->
  within "accept" @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  cancel_while_blocked "accept" ~waiting:(1, 0) (fun () ->
      ignore (Net.accept ~sw listener));
  (* The listener still works. *)
  let accepted = Fiber.fork ~sw (fun () -> fst (Net.accept ~sw listener)) in
  let c = Net.connect ~sw (Net.local_addr listener) in
  Net.write_string c "!";
  let buf = Bytes.create 1 in
  read_exactly (Fiber.join accepted) buf 1;
  Alcotest.(check char)
    "accepted after the cancelled accept" '!' (Bytes.get buf 0)

let read () =
  run @@ fun () ->
  within "read" @@ fun () ->
  Switch.run @@ fun sw ->
  let _, a, b = pair ~sw in
  let buf = Bytes.create 4 in
  cancel_while_blocked "read" ~waiting:(1, 0) (fun () ->
      ignore (Net.read_into a buf 0 4));
  (* No byte was lost to the cancelled reader, and the socket can be waited
     on again. *)
  let reader = Fiber.fork ~sw (fun () -> read_exactly a buf 4) in
  settle ();
  Net.write_string b "data";
  Fiber.join reader;
  Alcotest.(check string)
    "read after the cancelled read" "data" (Bytes.to_string buf)

let write () =
  run @@ fun () ->
  within "write" @@ fun () ->
  Switch.run @@ fun sw ->
  let _, a, _b = pair ~sw in
  (* Nobody reads [b]: the socket buffers fill and the writer waits. *)
  let big = Bytes.create (64 * 1024 * 1024) in
  cancel_while_blocked "write" ~waiting:(1, 0) (fun () ->
      Net.write_all a big 0 (Bytes.length big))

let sleep () =
  run @@ fun () ->
  within "sleep" @@ fun () ->
  cancel_while_blocked "sleep" ~waiting:(0, 1) (fun () -> Time.sleep 3600.);
  (* A sleep that is not cancelled still works. *)
  Time.sleep 0.001

let await_readable () =
  run @@ fun () ->
  within "await_readable" @@ fun () ->
  Switch.run @@ fun sw ->
  let r, w = Fd.pipe ~sw () in
  cancel_while_blocked "await_readable" ~waiting:(1, 0) (fun () ->
      Fd.await_readable r);
  let waiter = Fiber.fork ~sw (fun () -> Fd.await_readable r) in
  settle ();
  Fd.write_string w "x";
  Fiber.join waiter;
  check_no_waiters "after a real wake-up"

(* An interrupted wait raises what it was given and leaves no registration;
   the descriptor stays usable. *)
exception Moved

let interrupted () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let r, w = Fd.pipe ~sw () in
  let outcome = ref "still waiting" in
  let waiter =
    Fiber.fork ~sw (fun () ->
        match Fd.await_readable r with
        | () -> outcome := "returned"
        | exception Moved -> outcome := "interrupted")
  in
  settle ();
  Fd.interrupt r Moved;
  Fiber.join waiter;
  Alcotest.(check string) "the waiter" "interrupted" !outcome;
  check_no_waiters "after an interrupt";
  Fd.interrupt r Moved;
  let reader = Fiber.fork ~sw (fun () -> Fd.await_readable r) in
  settle ();
  Fd.write_string w "x";
  Fiber.join reader;
  check_no_waiters "after a real wake-up"

(* A watch (a parked connection's wait, with no fiber): its resumer is told
   once, of input, an interrupt or the close; one watch at a time; and
   watching again and again allocates nothing (what a parked connection
   allocates at each park would outlive the minor heap). *)
let watched () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let r, w = Fd.pipe ~sw () in
  let told = ref [] in
  let watcher result =
    told :=
      (match result with
      | Ok () -> "input"
      | Error Moved -> "interrupted"
      | Error e -> Printexc.to_string e)
      :: !told;
    true
  in
  Fd.watch_input r watcher;
  Alcotest.check_raises "a second watch"
    (Invalid_argument
       "Braid_io.Fd.watch_input: the descriptor is already watched") (fun () ->
      Fd.watch_input r watcher);
  Fd.write_string w "x";
  settle ();
  Alcotest.(check (list string)) "input" [ "input" ] !told;
  check_no_waiters "after input";
  Fd.watch_input r watcher;
  Fd.interrupt r Moved;
  Alcotest.(check (list string)) "interrupted" [ "interrupted"; "input" ] !told;
  check_no_waiters "after an interrupt";
  let spent f =
    let before = Gc.minor_words () in
    for _ = 1 to 100 do
      f ()
    done;
    Gc.minor_words () -. before
  in
  let interrupts = spent (fun () -> Fd.interrupt r Moved) in
  let watched =
    spent (fun () ->
        Fd.watch_input r watcher;
        Fd.interrupt r Moved)
  in
  (* Each watched interrupt makes [told] one cell (3 words) longer. *)
  Alcotest.(check bool)
    (Printf.sprintf "100 watches allocate nothing (%.0f words beyond %.0f)"
       (watched -. interrupts) 300.)
    true
    (watched -. interrupts <= 300. +. 10.);
  told := [];
  Fd.watch_input r watcher;
  Fd.close r;
  Alcotest.(check int) "told of the close" 1 (List.length !told);
  check_no_waiters "after the close"

(* Cancelled before it ever blocks: the operation raises at once. *)
let already_cancelled () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  let h =
    Fiber.fork (fun () ->
        Fiber.Scope.run (fun scope ->
            Fiber.Scope.cancel scope;
            ignore (Net.accept ~sw listener)))
  in
  expect_cancelled "accept in a cancelled scope" h;
  check_no_waiters "accept in a cancelled scope"

(* The first failure in a switch wakes every sibling, whatever it blocks in,
   is re-raised by [Switch.run], and the switch's sockets are closed. *)
exception Boom

let switch_failure () =
  run @@ fun () ->
  within "switch" @@ fun () ->
  let fds_before = (Braid_io.stats ()).open_fds in
  let cleaned = ref [] in
  let sockets = ref [] in
  (match
     Switch.run (fun sw ->
         let listener, a, _b = pair ~sw in
         sockets := [ listener; a ];
         let blocked name f =
           ignore
             (Fiber.fork ~sw (fun () ->
                  Fun.protect ~finally:(fun () -> cleaned := name :: !cleaned) f))
         in
         blocked "accept" (fun () -> ignore (Net.accept ~sw listener));
         blocked "read" (fun () ->
             ignore (Net.read_into a (Bytes.create 1) 0 1));
         blocked "sleep" (fun () -> Time.sleep 3600.);
         settle ();
         Alcotest.(check (pair int int)) "all three blocked" (2, 1) (waiters ());
         ignore (Fiber.fork ~sw (fun () -> raise Boom)))
   with
  | () -> Alcotest.fail "the switch did not fail"
  | exception Boom -> ());
  Alcotest.(check (list string))
    "every sibling unwound"
    [ "accept"; "read"; "sleep" ]
    (List.sort compare !cleaned);
  check_no_waiters "after the switch";
  List.iter
    (fun s -> Alcotest.(check bool) "socket closed" false (Fd.is_open s))
    !sockets;
  Alcotest.(check int)
    "no descriptor left registered" fds_before (Braid_io.stats ()).open_fds

(* A fiber on another domain cancels one blocked in this loop, which is
   asleep in epoll_wait: the eventfd wakes it. *)
let cancel_from_another_domain () =
  run @@ fun () ->
  within "cross-domain cancel" @@ fun () ->
  let h = Fiber.fork (fun () -> Time.sleep 3600.) in
  settle ();
  let canceller = Domain.spawn (fun () -> Fiber.cancel h) in
  expect_cancelled "sleep" h;
  Domain.join canceller;
  check_no_waiters "cross-domain cancel"

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "cancel"
    [
      ( "blocked fiber",
        [
          case "in accept" accept;
          case "in read" read;
          case "in write" write;
          case "in sleep" sleep;
          case "in await_readable" await_readable;
          case "interrupted" interrupted;
          case "watched" watched;
          case "before blocking" already_cancelled;
          case "from another domain" cancel_from_another_domain;
        ] );
      ("switch", [ case "first failure cancels siblings" switch_failure ]);
    ]
