(* The log writer: a fiber fed through a channel. These tests run it in an
   event loop of their own and check what reaches the files: drops counted
   and reported, files deleted or rotated under a stream of lines, failed
   writes, and a writer that crashes. Nothing measures time: waits poll for
   an outcome, bounded by the watchdog. *)

open Braid_server
open Text_and_process
module Fiber = Braid.Fiber
module Time = Braid_io.Time

let lines path =
  List.filter
    (fun l -> l <> "")
    (String.split_on_char '\n' (read_if_exists path))

let temp_dir () = Unix.realpath (Filename.temp_dir "braid-log" "")

(* Polls [cond] every 10 ms; the watchdog bounds the wait. *)
let rec wait_for cond =
  if not (cond ()) then (
    Time.sleep 0.01;
    wait_for cond)

(* Runs [f] in a loop while the writer runs beside it, then cancels the writer
   (which drains) and waits for it. *)
let with_writer w f =
  Braid_io.run (fun () ->
      let writer = Fiber.fork (fun () -> Log_writer.run w) in
      Fun.protect
        ~finally:(fun () ->
          Fiber.cancel writer;
          match Fiber.join writer with
          | () -> Alcotest.fail "the writer returned"
          | exception Braid.Cancelled -> ())
        f)

(* A full queue drops lines, counts them, and the count reaches the error
   log; lines queued before the writer starts are all written. *)
let full_queue () =
  let dir = temp_dir () in
  let access = dir ^ "/access.log" and error = dir ^ "/error.log" in
  let w = Log_writer.create ~capacity:4 ~access ~error () in
  for i = 1 to 100 do
    Log_writer.access w (Printf.sprintf "line %d" i)
  done;
  Alcotest.(check int) "dropped" 96 (Log_writer.dropped w);
  with_writer w ignore;
  Alcotest.(check (list string))
    "the first four"
    [ "line 1"; "line 2"; "line 3"; "line 4" ]
    (lines access);
  let errors = read_if_exists error in
  if not (contains errors "96 lines dropped") then
    Alcotest.failf "no drop count in the error log: %S" errors

(* Messages go to the error log with a timestamp; with no access log, access
   lines are neither written nor counted. *)
let error_only () =
  let dir = temp_dir () in
  let error = dir ^ "/error.log" in
  let w = Log_writer.create ~error () in
  Alcotest.(check bool) "no access log" false (Log_writer.logs_access w);
  Log_writer.access w "nobody keeps this";
  Log_writer.error w ~time:(Unix.gettimeofday ()) "error: something";
  with_writer w ignore;
  Alcotest.(check int) "dropped" 0 (Log_writer.dropped w);
  match lines error with
  | [ l ] ->
      if not (l.[0] = '[' && contains l "Z] error: something") then
        Alcotest.failf "bad line %S" l
  | ls -> Alcotest.failf "%d lines" (List.length ls)

(* A fiber writes numbered lines while the test deletes the file, then
   renames it away: each time a new file appears at the path and receives
   later lines; nothing is dropped. *)
let deleted_and_rotated () =
  let dir = temp_dir () in
  let access = dir ^ "/access.log" and error = dir ^ "/error.log" in
  let w = Log_writer.create ~check_interval:0.05 ~access ~error () in
  let sent = ref 0 in
  with_writer w (fun () ->
      let producer =
        Fiber.fork (fun () ->
            while true do
              incr sent;
              Log_writer.access w (Printf.sprintf "line %d" !sent);
              Time.sleep 0.001
            done)
      in
      wait_for (fun () -> Sys.file_exists access && lines access <> []);
      Sys.remove access;
      wait_for (fun () -> Sys.file_exists access && lines access <> []);
      let after_delete = List.hd (lines access) in
      Sys.rename access (access ^ ".1");
      wait_for (fun () -> Sys.file_exists access && lines access <> []);
      let first_new = List.hd (lines access) in
      Fiber.cancel producer;
      (try Fiber.join producer with Braid.Cancelled -> ());
      let number l = Scanf.sscanf l "line %d" Fun.id in
      if number first_new <= number after_delete then
        Alcotest.failf "new file starts with %S" first_new);
  Alcotest.(check int) "dropped" 0 (Log_writer.dropped w);
  let rotated = lines (access ^ ".1") and current = lines access in
  if rotated = [] then Alcotest.fail "the rotated file is empty";
  (* The last line sent is in the current file: the writer drained. *)
  Alcotest.(check string)
    "last line"
    (Printf.sprintf "line %d" !sent)
    (List.nth current (List.length current - 1));
  let errors = read_if_exists error in
  if not (contains errors "was moved or deleted; reopened") then
    Alcotest.failf "reopening not logged: %S" errors

(* While writes fail (EIO), lines are dropped and counted, the failure is
   logged, and writing resumes once the file accepts writes again. *)
let failing_writes () =
  let dir = temp_dir () in
  let access = dir ^ "/access.log" and error = dir ^ "/error.log" in
  let broken = Atomic.make false in
  (* Only the access file breaks: the error log must tell. *)
  let write fd b off len =
    if Atomic.get broken && contains (Bytes.sub_string b off len) "lost" then
      raise (Unix.Unix_error (EIO, "write", ""))
    else Unix.single_write fd b off len
  in
  let w = Log_writer.create ~check_interval:0.05 ~write ~access ~error () in
  with_writer w (fun () ->
      Log_writer.access w "before";
      wait_for (fun () -> lines access = [ "before" ]);
      Atomic.set broken true;
      Log_writer.access w "lost";
      wait_for (fun () -> Log_writer.dropped w >= 1);
      Atomic.set broken false;
      Log_writer.access w "after";
      wait_for (fun () -> List.mem "after" (lines access)));
  Alcotest.(check (list string)) "access" [ "before"; "after" ] (lines access);
  Alcotest.(check bool) "dropped counted" true (Log_writer.dropped w >= 1);
  let errors = read_if_exists error in
  if not (contains errors "failed: Input/output error") then
    Alcotest.failf "failure not logged: %S" errors;
  if not (contains errors "lines dropped") then
    Alcotest.failf "drops not reported: %S" errors

(* A write that raises kills the writer's work: it restarts, logs it, and
   later lines are still written. *)
let crash_restarts () =
  let dir = temp_dir () in
  let access = dir ^ "/access.log" and error = dir ^ "/error.log" in
  let crash = Atomic.make true in
  let write fd b off len =
    if Atomic.exchange crash false then failwith "injected crash"
    else Unix.single_write fd b off len
  in
  let w = Log_writer.create ~write ~access ~error () in
  with_writer w (fun () ->
      Log_writer.access w "first";
      wait_for (fun () -> Log_writer.restarts w = 1);
      Log_writer.access w "second";
      wait_for (fun () -> lines access = [ "second" ]));
  Alcotest.(check int) "restarts" 1 (Log_writer.restarts w);
  Alcotest.(check int) "the crashed batch is counted" 1 (Log_writer.dropped w);
  let errors = read_if_exists error in
  if
    not
      (contains errors
         "the log writer failed (Failure(\"injected crash\")); restarted")
  then Alcotest.failf "restart not logged: %S" errors

(* Switching paths while running: later lines go to the new file. *)
let switch_paths () =
  let dir = temp_dir () in
  let a = dir ^ "/a.log" and b = dir ^ "/b.log" in
  let w = Log_writer.create ~access:a () in
  with_writer w (fun () ->
      Log_writer.access w "to a";
      wait_for (fun () -> lines a = [ "to a" ]);
      Log_writer.set_paths w ~access:(Some b) ~error:None;
      Log_writer.access w "to b";
      wait_for (fun () -> lines b = [ "to b" ]));
  Alcotest.(check (list string)) "a" [ "to a" ] (lines a);
  Alcotest.(check (list string)) "b" [ "to b" ] (lines b)

let () =
  Test_support.Watchdog.start ~seconds:60. "test_logging";
  Alcotest.run "logging"
    [
      ( "writer",
        [
          Alcotest.test_case "full queue: drops counted and logged" `Quick
            full_queue;
          Alcotest.test_case "error log only" `Quick error_only;
          Alcotest.test_case "file deleted, then rotated" `Quick
            deleted_and_rotated;
          Alcotest.test_case "failing writes" `Quick failing_writes;
          Alcotest.test_case "crash restarts the writer" `Quick crash_restarts;
          Alcotest.test_case "switching files" `Quick switch_paths;
        ] );
    ]
