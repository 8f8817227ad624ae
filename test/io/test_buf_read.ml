(* The buffered reader over a pipe: lines, delimiters, exact counts, limits,
   end of stream, and a cancelled wait that loses nothing. *)

open Braid_io
open Common

let with_pipe f =
  run @@ fun () ->
  within "buf_read" @@ fun () ->
  Switch.run @@ fun sw ->
  let r, w = Fd.pipe ~sw () in
  f (Buf_read.of_fd ~size:8 r) w

let lines () =
  with_pipe @@ fun r w ->
  Fd.write_string w "first\r\nsec";
  Alcotest.(check (option string)) "CRLF" (Some "first") (Buf_read.line r);
  Switch.run (fun sw ->
      ignore
        (Fiber.fork ~sw (fun () ->
             Fiber.yield ();
             Fd.write_string w "ond, longer than the buffer\nlast")
          : unit Fiber.handle);
      Alcotest.(check (option string))
        "across writes and buffer growth"
        (Some "second, longer than the buffer") (Buf_read.line r));
  Fd.close w;
  Alcotest.(check (option string))
    "without a newline" (Some "last") (Buf_read.line r);
  Alcotest.(check (option string)) "end of stream" None (Buf_read.line r)

let limits () =
  with_pipe @@ fun r w ->
  Fd.write_string w "0123456789abcdef\nok\n";
  Alcotest.check_raises "too long" (Buf_read.Too_long 10) (fun () ->
      ignore (Buf_read.line ~max:10 r));
  Alcotest.(check bool) "the bytes stay" true (Buf_read.buffered r > 0);
  Alcotest.(check (option string))
    "with room" (Some "0123456789abcdef") (Buf_read.line ~max:16 r);
  Alcotest.(check (option string)) "then" (Some "ok") (Buf_read.line ~max:2 r)

let delimiters_and_counts () =
  with_pipe @@ fun r w ->
  Fd.write_string w "key=value;12345678901234567890tail";
  Alcotest.(check (option string)) "until =" (Some "key") (Buf_read.until r '=');
  Alcotest.(check (option string))
    "until ;" (Some "value") (Buf_read.until r ';');
  Alcotest.(check string)
    "exactly 20" "12345678901234567890" (Buf_read.exactly r 20);
  Fd.close w;
  Alcotest.check_raises "a piece cut by the end" End_of_file (fun () ->
      ignore (Buf_read.until r ';'));
  Alcotest.(check string) "what was buffered" "tail" (Buf_read.take_buffered r);
  Alcotest.check_raises "exactly past the end" End_of_file (fun () ->
      ignore (Buf_read.exactly r 1))

let cancelled_wait_loses_nothing () =
  with_pipe @@ fun r w ->
  Fd.write_string w "half a ";
  Alcotest.(check (option (option string)))
    "timed out" None
    (Time.timeout 0.02 (fun () -> Buf_read.line r));
  Fd.write_string w "line\n";
  Alcotest.(check (option string))
    "whole" (Some "half a line") (Buf_read.line r)

let () =
  Alcotest.run "buf_read"
    [
      ( "reader",
        [
          Alcotest.test_case "lines" `Quick lines;
          Alcotest.test_case "limits" `Quick limits;
          Alcotest.test_case "delimiters and counts" `Quick
            delimiters_and_counts;
          Alcotest.test_case "a cancelled wait loses nothing" `Quick
            cancelled_wait_loses_nothing;
        ] );
    ]
