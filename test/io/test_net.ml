(* Direct-style networking: an echo server with many clients, errors, closing,
   Unix-domain and IPv6 sockets. *)

open Braid_io
open Common

let clients = 1_000
let rounds = 5

(* Each client sends messages of its own sizes and checks every echo. *)
let client ~sw addr id =
  let s = Net.connect ~sw addr in
  for round = 1 to rounds do
    let size = 1 + (((id * 7) + (round * 13)) mod 200) in
    let msg =
      Bytes.init size (fun i -> Char.chr (97 + ((id + i + round) mod 26)))
    in
    Net.write_all s msg 0 size;
    let back = Bytes.create size in
    read_exactly s back size;
    if not (Bytes.equal msg back) then
      Alcotest.failf "client %d: echo differs" id
  done;
  Net.close s

let echo_many_clients () =
  run @@ fun () ->
  within "echo" @@ fun () ->
  with_echo_server @@ fun addr ->
  let served = ref 0 in
  Switch.run (fun sw ->
      for id = 1 to clients do
        ignore
          (Fiber.fork ~sw (fun () ->
               client ~sw addr id;
               incr served))
      done);
  Alcotest.(check int) "every client got all its echoes" clients !served

let connect_refused () =
  run @@ fun () ->
  let addr = Switch.run (fun sw -> Net.local_addr (Net.listen ~sw loopback)) in
  Switch.run @@ fun sw ->
  match Net.connect ~sw addr with
  | _ -> Alcotest.fail "connected to a closed port"
  | exception Io_error { op; error; detail = "" } ->
      Alcotest.(check string) "operation" "connect" op;
      Alcotest.(check bool) "refused" true (error = Unix.ECONNREFUSED)

let pair ~sw =
  let listener = Net.listen ~sw loopback in
  let accepted = Fiber.fork ~sw (fun () -> fst (Net.accept ~sw listener)) in
  let client = Net.connect ~sw (Net.local_addr listener) in
  (client, Fiber.join accepted)

let end_of_stream () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  Net.write_string a "last words";
  Net.shutdown a Unix.SHUTDOWN_SEND;
  let buf = Bytes.create 10 in
  read_exactly b buf 10;
  Alcotest.(check string)
    "data before the end" "last words" (Bytes.to_string buf);
  Alcotest.(check int) "then end of stream" 0 (Net.read_into b buf 0 10);
  Alcotest.(check int) "and again" 0 (Net.read_into b buf 0 10)

(* A read shorter than asked usually drains the socket, so the next read
   waits for epoll; but when the peer's end of stream is queued behind the
   data, it must still be read, not waited for. Both when the reader was
   already waiting and when everything was queued before it read. *)
let end_of_stream_after_a_short_read () =
  run @@ fun () ->
  within "short read then end of stream" @@ fun () ->
  Switch.run @@ fun sw ->
  let buf = Bytes.create 10 in
  let a, b = pair ~sw in
  let reader = Fiber.fork ~sw (fun () -> Net.read_into b buf 0 10) in
  settle ();
  Net.write_string a "abc";
  Net.shutdown a Unix.SHUTDOWN_SEND;
  Alcotest.(check int) "the data (reader waiting)" 3 (Fiber.join reader);
  Alcotest.(check int) "then the end" 0 (Net.read_into b buf 0 10);
  let c, d = pair ~sw in
  Net.write_string c "abc";
  Net.shutdown c Unix.SHUTDOWN_SEND;
  Time.sleep 0.01;
  Alcotest.(check int) "the data (all queued)" 3 (Net.read_into d buf 0 10);
  Alcotest.(check int) "then the end" 0 (Net.read_into d buf 0 10)

let close_wakes_reader () =
  run @@ fun () ->
  within "close" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, _b = pair ~sw in
  let reader = Fiber.fork ~sw (fun () -> read_outcome a) in
  settle ();
  Alcotest.(check int) "the reader waits" 1 (fst (waiters ()));
  Net.close a;
  Alcotest.(check string) "the reader's outcome" "EBADF" (Fiber.join reader);
  check_no_waiters "after close";
  Alcotest.(check bool) "closed" false (Fd.is_open a);
  Net.close a;
  match Net.write_string a "x" with
  | () -> Alcotest.fail "wrote to a closed socket"
  | exception Io_error { op = "write"; error = Unix.EBADF; detail = "" } -> ()

let write_to_vanished_peer () =
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  Net.close b;
  (* The first write may be accepted by the kernel; then the peer resets.
     On io_uring a write only queues its bytes, and a send that failed is
     reported by the next write once the loop has seen its completion: the
     writer gives the loop a turn between writes, as any writer that waits
     for something does. *)
  let rec keep_writing n =
    if n = 0 then Alcotest.fail "writes to a closed peer kept succeeding"
    else
      match Net.write_string a (String.make 1024 'x') with
      | () ->
          Fiber.yield ();
          keep_writing (n - 1)
      | exception
          Io_error
            { op = "write"; error = Unix.EPIPE | Unix.ECONNRESET; detail = "" }
        ->
          ()
  in
  keep_writing 100

(* More than the socket buffers hold, so the writer has to wait for the
   reader. *)
let large_transfer () =
  run @@ fun () ->
  within "large transfer" @@ fun () ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let size = 8 * 1024 * 1024 in
  let data = Bytes.init size (fun i -> Char.chr (i mod 251)) in
  let writer =
    Fiber.fork ~sw (fun () ->
        Net.write_all a data 0 size;
        Net.shutdown a SHUTDOWN_SEND)
  in
  let received = Buffer.create size in
  let buf = Bytes.create 65536 in
  let rec drain () =
    match Net.read_into b buf 0 65536 with
    | 0 -> ()
    | n ->
        Buffer.add_subbytes received buf 0 n;
        Time.sleep 0.;
        drain ()
  in
  drain ();
  Fiber.join writer;
  Alcotest.(check bool)
    "all bytes, in order" true
    (Bytes.equal data (Buffer.to_bytes received))

let echo_over addr =
  run @@ fun () ->
  within "echo" @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw addr in
  let _ =
    Fiber.fork ~sw (fun () ->
        Net.accept_fork ~sw ~on_error:raise listener (fun c _ -> echo c))
  in
  let s = Net.connect ~sw (Net.local_addr listener) in
  Net.write_string s "ping";
  let buf = Bytes.create 4 in
  read_exactly s buf 4;
  Alcotest.(check string) "echoed" "ping" (Bytes.to_string buf);
  Net.close s

let unix_domain () =
  let path =
    Filename.concat
      (Filename.get_temp_dir_name ())
      (Printf.sprintf "braid-io-test-%d.sock" (Unix.getpid ()))
  in
  Fun.protect
    ~finally:(fun () -> try Sys.remove path with Sys_error _ -> ())
    (fun () -> echo_over (Net.unix_path path))

let ipv6 () =
  match echo_over (Net.tcp "::1" 0) with
  | () -> ()
  | exception
      Io_error
        {
          op = "listen";
          error = Unix.EADDRNOTAVAIL | Unix.EAFNOSUPPORT;
          detail = "";
        } ->
      Printf.printf "IPv6 loopback unavailable here: skipped\n"

let several_acceptors () =
  run @@ fun () ->
  within "acceptors" @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  let accepted = ref 0 in
  let acceptors =
    List.init 4 (fun _ ->
        Fiber.fork ~sw (fun () ->
            let c, _ = Net.accept ~sw listener in
            incr accepted;
            Net.close c))
  in
  settle ();
  Alcotest.(check int) "four fibers wait on one listener" 4 (fst (waiters ()));
  for _ = 1 to 4 do
    let c = Net.connect ~sw (Net.local_addr listener) in
    Net.close c
  done;
  List.iter Fiber.join acceptors;
  Alcotest.(check int) "each accepted one" 4 !accepted

let handler_errors_go_to_on_error () =
  run @@ fun () ->
  within "on_error" @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  let errors = ref [] in
  let server =
    Fiber.fork ~sw (fun () ->
        for _ = 1 to 2 do
          Net.accept_fork ~sw
            ~on_error:(fun e -> errors := e :: !errors)
            listener
            (fun _ _ -> failwith "handler bug")
        done)
  in
  for _ = 1 to 2 do
    let c = Net.connect ~sw (Net.local_addr listener) in
    Alcotest.(check int)
      "the handler's socket is closed" 0
      (Net.read_into c (Bytes.create 1) 0 1);
    Net.close c
  done;
  Fiber.join server;
  settle ();
  Alcotest.(check int) "both failures reported" 2 (List.length !errors)

(* Epoll refuses regular files; they are always ready, and reads just work. *)
let regular_file () =
  let path = Filename.temp_file "braid-io-test" ".txt" in
  Fun.protect ~finally:(fun () -> Sys.remove path) @@ fun () ->
  Out_channel.with_open_bin path (fun oc -> output_string oc "contents");
  run @@ fun () ->
  Switch.run @@ fun sw ->
  let f = Fd.of_unix ~sw (Unix.openfile path [ O_RDONLY; O_CLOEXEC ] 0) in
  let buf = Bytes.create 64 in
  let n = Fd.read_into f buf 0 64 in
  Alcotest.(check string) "read" "contents" (Bytes.sub_string buf 0 n);
  Alcotest.(check int) "then end of file" 0 (Fd.read_into f buf 0 64);
  Fd.await_readable f;
  Fd.close f

let outside_the_loop () =
  let outside name f =
    match f () with
    | _ -> Alcotest.failf "%s worked outside Braid_io.run" name
    | exception Invalid_argument msg ->
        Alcotest.(check bool)
          (name ^ " explains: " ^ msg)
          true
          (String.length msg > 0)
  in
  outside "Net.listen" (fun () ->
      Switch.run (fun sw -> ignore (Net.listen ~sw loopback)));
  outside "Net.connect" (fun () ->
      Switch.run (fun sw -> ignore (Net.connect ~sw loopback)));
  outside "Time.sleep" (fun () -> Time.sleep 0.01);
  outside "Time.timeout" (fun () -> ignore (Time.timeout 1. ignore));
  outside "nested run" (fun () -> run (fun () -> run ignore))

(* Fairness: connection A's sender has flooded it (its receive queue holds
   32 KiB), and its reader takes a byte per read, so every read finds data
   and never waits. Connection B's writer, runnable all along, must still
   get its turn within the I/O budget, not after A's 32,768 reads. *)
let flooding_reader_yields () =
  run @@ fun () ->
  within "fairness" @@ fun () ->
  Switch.run @@ fun sw ->
  let a_sender, a = pair ~sw in
  let b, b_peer = pair ~sw in
  let flood = 32768 in
  Net.write_all a_sender (Bytes.make flood 'x') 0 flood;
  (* Wait until all of it is readable at [a]. *)
  let rec settle_queue () =
    let pending =
      (* On io_uring the bytes leave with the loop's next turn. *)
      try Unix.recv (Fd.to_unix a) (Bytes.create flood) 0 flood [ MSG_PEEK ]
      with Unix.Unix_error (Unix.EAGAIN, _, _) -> 0
    in
    if pending < flood then (
      Time.sleep 0.001;
      settle_queue ())
  in
  settle_queue ();
  let read_by_a = ref 0 and seen_by_b = ref (-1) in
  let reader =
    Fiber.fork ~sw (fun () ->
        let buf = Bytes.create 1 in
        while !read_by_a < flood do
          read_by_a := !read_by_a + Net.read_into a buf 0 1
        done)
  in
  let writer =
    Fiber.fork ~sw (fun () ->
        Net.write_string b "tick";
        seen_by_b := !read_by_a)
  in
  Fiber.join reader;
  Fiber.join writer;
  let tick = Bytes.create 4 in
  read_exactly b_peer tick 4;
  Alcotest.(check bool)
    (Printf.sprintf "B wrote after A's read %d (budget %d), not after %d"
       !seen_by_b Fd.io_budget flood)
    true
    (!seen_by_b >= 0 && !seen_by_b <= 2 * Fd.io_budget)

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "net"
    [
      ( "echo",
        [
          case
            (Printf.sprintf "%d concurrent clients" clients)
            echo_many_clients;
          case "Unix-domain socket" unix_domain;
          case "IPv6" ipv6;
          case "8 MiB through one connection" large_transfer;
        ] );
      ( "errors",
        [
          case "connect refused" connect_refused;
          case "end of stream" end_of_stream;
          case "end of stream after a short read"
            end_of_stream_after_a_short_read;
          case "close wakes a blocked reader" close_wakes_reader;
          case "writing to a vanished peer" write_to_vanished_peer;
          case "handler failures go to on_error" handler_errors_go_to_on_error;
          case "outside Braid_io.run" outside_the_loop;
          case "a regular file" regular_file;
        ] );
      ( "accept",
        [ case "several fibers accept on one listener" several_acceptors ] );
      ( "fairness",
        [ case "a flooded reader yields to a writer" flooding_reader_yields ] );
    ]
