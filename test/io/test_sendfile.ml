(* Net.sendfile and Net.write_more over real TCP connections: files larger
   than the socket buffers, offsets and lengths, a file shorter than asked,
   a vanished peer, a descriptor sendfile cannot read. *)

open Braid_io
open Common

let pair ~sw =
  let listener = Net.listen ~sw loopback in
  let accepted = Fiber.fork ~sw (fun () -> fst (Net.accept ~sw listener)) in
  let client = Net.connect ~sw (Net.local_addr listener) in
  (client, Fiber.join accepted)

(* A temporary file holding [content], open for reading, removed at once
   (the descriptor keeps it), closed by [f]'s end. *)
let with_file content f =
  let path = Filename.temp_file "braid-sendfile" ".bin" in
  Out_channel.with_open_bin path (fun oc -> output_string oc content);
  let fd = Unix.openfile path [ O_RDONLY; O_CLOEXEC ] 0 in
  Sys.remove path;
  Fun.protect ~finally:(fun () -> Unix.close fd) (fun () -> f fd)

let content size =
  String.init size (fun i -> Char.chr (((i * 31) + (i / 253)) land 255))

(* Everything [s] receives until end of stream, reading [piece] bytes at a
   time and yielding to the loop between reads: a slow reader. *)
let receive_all ?(piece = 65536) s =
  let received = Buffer.create 65536 in
  let buf = Bytes.create piece in
  let rec drain () =
    match Net.read_into s buf 0 piece with
    | 0 -> Buffer.contents received
    | n ->
        Buffer.add_subbytes received buf 0 n;
        Time.sleep 0.;
        drain ()
  in
  drain ()

(* 8 MiB: more than the socket buffers of both ends hold, so the sender
   waits for the reader, who starts late and reads 4 KiB at a time. *)
let larger_than_the_socket_buffer () =
  run @@ fun () ->
  within "8 MiB by sendfile" @@ fun () ->
  let size = 8 * 1024 * 1024 in
  let data = content size in
  with_file data @@ fun file ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let sender =
    Fiber.fork ~sw (fun () ->
        let sent = Net.sendfile a file ~off:0 ~len:size in
        Net.shutdown a SHUTDOWN_SEND;
        sent)
  in
  (* Let the sender fill the socket and wait before anything is read. *)
  Time.sleep 0.05;
  let received = receive_all ~piece:4096 b in
  Alcotest.(check int) "sendfile's count" size (Fiber.join sender);
  Alcotest.(check int) "length received" size (String.length received);
  Alcotest.(check bool) "all bytes, in order" true (String.equal data received);
  Alcotest.(check int)
    "the file's own offset did not move" 0
    (Unix.lseek file 0 SEEK_CUR)

let offsets_and_lengths () =
  run @@ fun () ->
  within "offsets and lengths" @@ fun () ->
  let size = 100_000 in
  let data = content size in
  with_file data @@ fun file ->
  let check ~off ~len ~expected =
    Switch.run @@ fun sw ->
    let a, b = pair ~sw in
    let reader = Fiber.fork ~sw (fun () -> receive_all b) in
    let sent = Net.sendfile a file ~off ~len in
    Net.shutdown a SHUTDOWN_SEND;
    let what = Printf.sprintf "off %d, len %d" off len in
    Alcotest.(check int) (what ^ ": count") expected sent;
    Alcotest.(check bool)
      (what ^ ": the slice") true
      (String.equal
         (if expected = 0 then "" else String.sub data off expected)
         (Fiber.join reader))
  in
  check ~off:0 ~len:size ~expected:size;
  check ~off:12_345 ~len:50_000 ~expected:50_000;
  check ~off:(size - 1) ~len:1 ~expected:1;
  check ~off:0 ~len:0 ~expected:0;
  (* The file ends first: a short count, as a file that shrank gives. *)
  check ~off:90_000 ~len:20_000 ~expected:10_000;
  check ~off:size ~len:10 ~expected:0;
  check ~off:(size + 5) ~len:10 ~expected:0;
  Switch.run (fun sw ->
      let a, _ = pair ~sw in
      List.iter
        (fun (off, len) ->
          match Net.sendfile a file ~off ~len with
          | _ -> Alcotest.failf "sendfile ~off:%d ~len:%d accepted" off len
          | exception Invalid_argument _ -> ())
        [ (-1, 10); (0, -1) ])

(* The head with MSG_MORE, then the file: one stream, in order. *)
let head_then_file () =
  run @@ fun () ->
  within "write_more then sendfile" @@ fun () ->
  let data = content 300_000 in
  with_file data @@ fun file ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  let reader = Fiber.fork ~sw (fun () -> receive_all b) in
  let head =
    Bytes.of_string "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n"
  in
  Net.write_more a head 0 (Bytes.length head);
  Alcotest.(check int) "count" 300_000 (Net.sendfile a file ~off:0 ~len:300_000);
  (* Held bytes go out with the next plain write too. *)
  Net.write_more a head 0 4;
  Net.write_string a "!";
  Net.shutdown a SHUTDOWN_SEND;
  Alcotest.(check bool)
    "head, file, then the rest" true
    (String.equal (Bytes.to_string head ^ data ^ "HTTP!") (Fiber.join reader))

(* A peer that closed its socket: EPIPE (or a reset), never a hang or a
   SIGPIPE. *)
let vanished_peer () =
  run @@ fun () ->
  within "sendfile to a vanished peer" @@ fun () ->
  let size = 8 * 1024 * 1024 in
  with_file (content size) @@ fun file ->
  Switch.run @@ fun sw ->
  let a, b = pair ~sw in
  Net.close b;
  match Net.sendfile a file ~off:0 ~len:size with
  | n -> Alcotest.failf "sent %d bytes to a closed peer" n
  | exception
      Io_error
        { op = "sendfile"; error = Unix.EPIPE | Unix.ECONNRESET; detail = "" }
    ->
      ()

(* SIGPIPE is blocked in a loop's thread only while the loop runs: after it,
   the thread's mask is as before (and the SIGPIPE the vanished peer left
   pending was taken, or the unblocking would have killed this test). *)
let sigpipe_blocked_in_this_thread () =
  In_channel.with_open_text "/proc/thread-self/status" In_channel.input_all
  |> String.split_on_char '\n'
  |> List.find_map (fun line ->
         match String.split_on_char ':' line with
         | [ "SigBlk"; mask ] ->
             let mask = Int64.of_string ("0x" ^ String.trim mask) in
             (* Bit 12: SIGPIPE is signal 13. *)
             Some (Int64.logand mask 0x1000L <> 0L)
         | _ -> None)
  |> Option.get

let sigpipe_only_while_running () =
  Alcotest.(check bool) "before" false (sigpipe_blocked_in_this_thread ());
  vanished_peer ();
  run (fun () ->
      Alcotest.(check bool)
        "while a loop runs" true
        (sigpipe_blocked_in_this_thread ()));
  Alcotest.(check bool) "after" false (sigpipe_blocked_in_this_thread ())

(* The peer stops reading and the sender waits; closing the socket wakes
   it with EBADF, as for write_all. *)
let close_wakes_the_sender () =
  run @@ fun () ->
  within "close wakes sendfile" @@ fun () ->
  let size = 8 * 1024 * 1024 in
  with_file (content size) @@ fun file ->
  Switch.run @@ fun sw ->
  let a, _b = pair ~sw in
  let sender =
    Fiber.fork ~sw (fun () ->
        match Net.sendfile a file ~off:0 ~len:size with
        | n -> Printf.sprintf "sent %d" n
        | exception Io_error { op = "sendfile"; error; detail = "" } ->
            Unix.error_message error)
  in
  (* Yield until the sender waits for the socket: the peer never reads. *)
  let rec until_waiting n =
    if n = 0 then Alcotest.fail "the sender never waited"
    else if (Braid_io.stats ()).fd_waiters = 0 then (
      Fiber.yield ();
      until_waiting (n - 1))
  in
  until_waiting 1_000_000;
  Net.close a;
  Alcotest.(check string)
    "the sender's outcome"
    (Unix.error_message Unix.EBADF)
    (Fiber.join sender)

(* A descriptor the kernel cannot send from (a pipe: ESPIPE, as it has no
   offsets), nothing sent, so the caller can fall back to read and write. *)
let not_a_file () =
  run @@ fun () ->
  within "sendfile from a pipe" @@ fun () ->
  let r, w = Unix.pipe ~cloexec:true () in
  Fun.protect
    ~finally:(fun () -> List.iter Unix.close [ r; w ])
    (fun () ->
      ignore (Unix.write_substring w "abc" 0 3);
      Switch.run @@ fun sw ->
      let a, b = pair ~sw in
      (match Net.sendfile a r ~off:0 ~len:3 with
      | n -> Alcotest.failf "sent %d bytes from a pipe" n
      | exception
          Io_error
            {
              op = "sendfile";
              error = Unix.EINVAL | ENOSYS | ESPIPE;
              detail = "";
            } ->
          ());
      Net.write_string a "ok";
      Net.shutdown a SHUTDOWN_SEND;
      Alcotest.(check string) "nothing else was sent" "ok" (receive_all b))

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "sendfile"
    [
      ( "sendfile",
        [
          case "8 MiB, larger than the socket buffers, slow reader"
            larger_than_the_socket_buffer;
          case "offsets and lengths" offsets_and_lengths;
          case "write_more, then the file" head_then_file;
          case "a vanished peer gives EPIPE" vanished_peer;
          case "SIGPIPE blocked only while a loop runs"
            sigpipe_only_while_running;
          case "close wakes a waiting sender" close_wakes_the_sender;
          case "a pipe cannot be sent from" not_a_file;
        ] );
    ]
