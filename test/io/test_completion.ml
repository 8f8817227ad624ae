(* Reads and writes of sockets as io_uring operations (Uring_ops), run on
   both backends: what a pending receive must never do, whichever backend
   reads. On io_uring, a reader blocked in a receive owns an operation the
   kernel is completing: cancelled as its bytes arrive, the bytes must
   reach the next read; closed under it, the socket must close (a pending
   receive holds the socket's file); a second reader, a large write and
   reads past the end must behave as with read(2). *)

open Braid_io
open Common

let pair ~sw =
  let listener = Net.listen ~sw loopback in
  let accepted = Fiber.fork ~sw (fun () -> fst (Net.accept ~sw listener)) in
  let client = Net.connect ~sw (Net.local_addr listener) in
  (client, Fiber.join accepted)

(* Yields until the calling loop has [n] fibers waiting for descriptors. *)
let until_waiting n =
  let rec go tries =
    if fst (waiters ()) <> n then
      if tries = 0 then Alcotest.failf "never %d waiting" n
      else (
        Fiber.yield ();
        go (tries - 1))
  in
  go 100_000

(* The bytes arrive, and the reader is cancelled, before the loop looks at
   its completions: the receive has completed in the kernel for a fiber
   that is gone. *)
let cancelled_as_bytes_arrive () =
  run @@ fun () ->
  within "cancelled as bytes arrive" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  for round = 1 to 50 do
    let buf = Bytes.create 16 in
    let reader = Fiber.fork (fun () -> Net.read_into a buf 0 16) in
    until_waiting 1;
    let message = Printf.sprintf "round %02d" round in
    let length = String.length message in
    (* Written with write(2): a write of braid_io's would let the loop
       run, and the reader get its bytes before it is cancelled. *)
    Alcotest.(check int)
      "written" length
      (Unix.single_write_substring (Fd.to_unix b) message 0 length);
    (* Time for the kernel to complete the receive; the loop does not
       look at its completions meanwhile. *)
    Unix.sleepf 0.001;
    Fiber.cancel reader;
    let got =
      match Fiber.join reader with
      | n -> Bytes.sub_string buf 0 n
      | exception Braid.Cancelled ->
          let got = Bytes.create length in
          read_exactly a got length;
          Bytes.to_string got
    in
    Alcotest.(check string) "the bytes reach a read" message got
  done;
  check_no_waiters "cancelled as bytes arrive"

(* A cancelled read whose receive is still pending: the next reader takes
   it over, and gets the bytes that come after. *)
let next_reader_after_cancel () =
  run @@ fun () ->
  within "next reader" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let buf = Bytes.create 8 in
  let first = Fiber.fork (fun () -> ignore (Net.read_into a buf 0 8)) in
  until_waiting 1;
  Fiber.cancel first;
  (match Fiber.join first with () -> () | exception Braid.Cancelled -> ());
  let second = Fiber.fork (fun () -> Net.read_into a buf 0 2) in
  until_waiting 1;
  Net.write_string b "abcdef";
  let n = Fiber.join second in
  Alcotest.(check string) "the second reader's" "ab" (Bytes.sub_string buf 0 n);
  let rest = Bytes.create 4 in
  read_exactly a rest 4;
  Alcotest.(check string)
    "then the rest, in order" "cdef" (Bytes.to_string rest)

(* Closing a socket under a pending read fails the read with EBADF and
   closes the socket at once: the peer sees its end of stream. *)
let closed_under_read () =
  run @@ fun () ->
  within "closed under a read" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let buf = Bytes.create 8 in
  let reader =
    Fiber.fork (fun () ->
        match Net.read_into a buf 0 8 with
        | n -> Printf.sprintf "read %d" n
        | exception Io_error { op = "read"; error; _ } ->
            Unix.error_message error)
  in
  until_waiting 1;
  Net.close a;
  Alcotest.(check string)
    "the reader's outcome"
    (Unix.error_message Unix.EBADF)
    (Fiber.join reader);
  Alcotest.(check int) "the peer's end of stream" 0 (Net.read_into b buf 0 8);
  check_no_waiters "closed under a read"

(* Two fibers reading one socket: each read gets some of the bytes, none
   is lost or doubled. *)
let two_readers () =
  run @@ fun () ->
  within "two readers" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let read () =
    let buf = Bytes.create 1 in
    let n = Net.read_into a buf 0 1 in
    Bytes.sub_string buf 0 n
  in
  let r1 = Fiber.fork read in
  let r2 = Fiber.fork read in
  until_waiting 2;
  Net.write_string b "x";
  settle ();
  Net.write_string b "y";
  let got = List.sort compare [ Fiber.join r1; Fiber.join r2 ] in
  Alcotest.(check (list string)) "each byte once" [ "x"; "y" ] got

(* More than one operation's worth each way (a send copies at most 256 KiB),
   compared byte for byte. *)
let large_transfer () =
  run @@ fun () ->
  within "large transfer" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let size = (3 * 1024 * 1024) + 12345 in
  let data =
    Bytes.init size (fun i -> Char.chr (((i * 7) + (i / 251)) land 255))
  in
  let writer =
    Fiber.fork (fun () ->
        Net.write_all a data 0 size;
        Net.shutdown a Unix.SHUTDOWN_SEND)
  in
  let got = Buffer.create size in
  let buf = Bytes.create 100_000 in
  let rec drain () =
    match Net.read_into b buf 0 (Bytes.length buf) with
    | 0 -> ()
    | n ->
        Buffer.add_subbytes got buf 0 n;
        drain ()
  in
  drain ();
  Fiber.join writer;
  Alcotest.(check int) "length" size (Buffer.length got);
  Alcotest.(check bool)
    "the same bytes" true
    (String.equal (Buffer.contents got) (Bytes.unsafe_to_string data))

(* Fd.interrupt reaches a reader in a receive as one waiting for readiness;
   the bytes that come after are the next read's. *)
let interrupted_read () =
  run @@ fun () ->
  within "interrupted" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let buf = Bytes.create 8 in
  let reader =
    Fiber.fork (fun () ->
        match Net.read_into a buf 0 8 with
        | n -> Printf.sprintf "read %d" n
        | exception Failure why -> why)
  in
  until_waiting 1;
  Fd.interrupt a (Failure "interrupted");
  Alcotest.(check string)
    "the reader's outcome" "interrupted" (Fiber.join reader);
  Net.write_string b "later";
  let got = Bytes.create 5 in
  read_exactly a got 5;
  Alcotest.(check string) "the next read" "later" (Bytes.to_string got);
  check_no_waiters "interrupted"

let reads_past_the_end () =
  run @@ fun () ->
  within "past the end" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let buf = Bytes.create 8 in
  let reader = Fiber.fork (fun () -> Net.read_into b buf 0 8) in
  until_waiting 1;
  Net.close a;
  Alcotest.(check int) "end of stream" 0 (Fiber.join reader);
  Alcotest.(check int) "again" 0 (Net.read_into b buf 0 8);
  Alcotest.(check int) "and again" 0 (Net.read_into b buf 0 8)

(* Many writes, most while the previous ones are still queued (on io_uring
   a write does not wait for its send), of every size up to more than one
   send takes, through [write_all], [write_string] and [write_more], by a
   writer that closes the socket right after its last one: the reader gets
   every byte, in order, then the end. *)
let queued_sends_in_order () =
  run @@ fun () ->
  within "queued sends in order" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let expected = Buffer.create (8 * 1024 * 1024) in
  let record i =
    let size = if i mod 997 = 0 then 300_000 + i else 1 + (i * 7919 mod 1500) in
    String.init size (fun j -> Char.chr ((i + (j * 31)) land 0xff))
  in
  let records = Array.init 5000 record in
  Array.iter (Buffer.add_string expected) records;
  let writer =
    Fiber.fork (fun () ->
        Array.iteri
          (fun i r ->
            (match i mod 3 with
            | 0 -> Net.write_string a r
            | 1 ->
                Net.write_all a (Bytes.unsafe_of_string r) 0 (String.length r)
            | _ ->
                Net.write_more a (Bytes.unsafe_of_string r) 0 (String.length r));
            if i mod 500 = 0 then Fiber.yield ())
          records;
        Net.close a)
  in
  let got = Buffer.create (Buffer.length expected) in
  let buf = Bytes.create 4096 in
  let rec drain () =
    match Net.read_into b buf 0 (Bytes.length buf) with
    | 0 -> ()
    | n ->
        Buffer.add_subbytes got buf 0 n;
        drain ()
  in
  drain ();
  Fiber.join writer;
  Alcotest.(check int) "length" (Buffer.length expected) (Buffer.length got);
  Alcotest.(check bool)
    "the same bytes, in order" true
    (String.equal (Buffer.contents got) (Buffer.contents expected))

(* The peer resets the connection. On io_uring the first write after it may
   only queue its bytes; its send fails, and the loop's next turn sees it:
   the next write raises, and so does every one after. On epoll the first
   or the second write raises. *)
let error_after_reset () =
  run @@ fun () ->
  within "error after reset" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  Unix.setsockopt_optint (Fd.to_unix b) Unix.SO_LINGER (Some 0);
  Net.close b;
  (* The reset has reached [a] once a read sees it. *)
  (match Net.read_into a (Bytes.create 1) 0 1 with
  | _ -> ()
  | exception Io_error { error = Unix.ECONNRESET; _ } -> ());
  let write () =
    match Net.write_string a "after the reset" with
    | () -> `Taken
    | exception
        Io_error { op = "write"; error = Unix.EPIPE | Unix.ECONNRESET; _ } ->
        `Failed
  in
  let first = write () in
  Fiber.yield ();
  let second = write () in
  if first = `Taken then
    Alcotest.(check bool) "the next write fails" true (second = `Failed);
  Fiber.yield ();
  Alcotest.(check bool) "and the one after" true (write () = `Failed)

(* A peer that does not read: the writer must end up waiting with a bounded
   number of bytes taken (on io_uring, a write that never waited would let
   the queue grow to everything written), and everything arrives once the
   peer reads. *)
let bounded_queue () =
  run @@ fun () ->
  within "bounded queue" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  Unix.setsockopt_int (Fd.to_unix a) Unix.SO_SNDBUF 65536;
  Unix.setsockopt_int (Fd.to_unix b) Unix.SO_RCVBUF 65536;
  let size = 32 * 1024 * 1024 and chunk = 65536 in
  let data = Bytes.init size (fun i -> Char.chr (i * 13 land 0xff)) in
  let taken = ref 0 in
  let writer =
    Fiber.fork (fun () ->
        while !taken < size do
          Net.write_all a data !taken chunk;
          taken := !taken + chunk
        done)
  in
  until_waiting 1;
  let bound = 4 * 1024 * 1024 in
  if !taken > bound then
    Alcotest.failf "%d bytes taken by a peer that does not read (bound %d)"
      !taken bound;
  let got = Bytes.create size in
  read_exactly b got size;
  Fiber.join writer;
  Alcotest.(check bool) "the same bytes" true (Bytes.equal got data)

let () =
  Alcotest.run "completion"
    [
      ( "reads",
        [
          Alcotest.test_case "cancelled as the bytes arrive" `Quick
            cancelled_as_bytes_arrive;
          Alcotest.test_case "the next reader after a cancel" `Quick
            next_reader_after_cancel;
          Alcotest.test_case "closed under a read" `Quick closed_under_read;
          Alcotest.test_case "two readers" `Quick two_readers;
          Alcotest.test_case "interrupted" `Quick interrupted_read;
          Alcotest.test_case "past the end" `Quick reads_past_the_end;
        ] );
      ( "writes",
        [
          Alcotest.test_case "large transfer" `Quick large_transfer;
          Alcotest.test_case "queued sends in order, then close" `Quick
            queued_sends_in_order;
          Alcotest.test_case "an error after a reset, on the next write" `Quick
            error_after_reset;
          Alcotest.test_case "a bound on queued bytes" `Quick bounded_queue;
        ] );
    ]
