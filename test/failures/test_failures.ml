(* A failure raised after a suspension keeps the frames of the code that
   called the suspending function (the fiber's stack is the continuation), on
   the IO loop, in a pool task and in an Lwt-bridged fiber; a pool task's
   failure carries its backtrace to whoever awaits it, and one nobody awaits
   is reported by the pool's shutdown. *)

module Promise = Braid_sync.Promise

(* A promise filled by another systhread a little later: awaiting it really
   suspends the calling fiber, whatever its scheduler. *)
let filled_later () =
  let p = Promise.create () in
  ignore
    (Thread.create
       (fun () ->
         Thread.delay 0.005;
         Promise.fill p ())
       ());
  p

let[@inline never] fail_after_suspension wait : unit =
  wait ();
  if Sys.opaque_identity true then raise (Failure "after the suspension")

(* Each caller is a distinct function with work after the call, so neither
   inlining nor a tail call can remove its frame. *)
let[@inline never] caller_on_the_io_loop wait =
  fail_after_suspension wait;
  ignore (Sys.opaque_identity 1)

let[@inline never] caller_in_a_pool_task wait =
  fail_after_suspension wait;
  ignore (Sys.opaque_identity 2)

let[@inline never] caller_in_an_lwt_fiber wait =
  fail_after_suspension wait;
  ignore (Sys.opaque_identity 3)

let backtrace_of f =
  match f () with
  | () -> Alcotest.fail "expected a failure"
  | exception Failure _ ->
      Printexc.raw_backtrace_to_string (Printexc.get_raw_backtrace ())

let check_names caller backtrace =
  let mentions name =
    let n = String.length name and b = String.length backtrace in
    let rec from i =
      i + n <= b && (String.sub backtrace i n = name || from (i + 1))
    in
    from 0
  in
  if not (mentions caller) then
    Alcotest.failf "the backtrace does not name %s:\n%s" caller backtrace

let io_loop () =
  let backtrace =
    Braid_io.run (fun () ->
        let p = filled_later () in
        backtrace_of (fun () ->
            caller_on_the_io_loop (fun () -> Promise.await p)))
  in
  check_names "caller_on_the_io_loop" backtrace

let pool_task () =
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let p = filled_later () in
  let inside =
    Braid_pool.run pool (fun () ->
        backtrace_of (fun () ->
            caller_in_a_pool_task (fun () -> Promise.await p)))
  in
  check_names "caller_in_a_pool_task" inside;
  (* The same failure let out of the task reaches its awaiter with the
     task's backtrace. *)
  let q = filled_later () in
  let awaited =
    backtrace_of (fun () ->
        Braid_pool.run pool (fun () ->
            caller_in_a_pool_task (fun () -> Promise.await q)))
  in
  check_names "caller_in_a_pool_task" awaited

let lwt_fiber () =
  let bridge = Braid_lwt.create () in
  let backtrace =
    Lwt_main.run
      (Braid_lwt.run bridge (fun () ->
           backtrace_of (fun () ->
               caller_in_an_lwt_fiber (fun () ->
                   Braid_lwt.await_lwt bridge (Lwt_unix.sleep 0.005)))))
  in
  check_names "caller_in_an_lwt_fiber" backtrace

(* Raises itself (no tail call to [failwith]), so its frame is the top. *)
let[@inline never] raises_deep_down () =
  ignore (Sys.opaque_identity 0);
  raise (Failure "deep down")

let promise_keeps_backtrace () =
  let p = Promise.create () in
  (match raises_deep_down () with
  | () -> ()
  | exception e ->
      Promise.fill_error ~backtrace:(Printexc.get_raw_backtrace ()) p e);
  let backtrace =
    match Promise.await p with
    | () -> Alcotest.fail "expected the error"
    | exception Failure _ ->
        Printexc.raw_backtrace_to_string (Printexc.get_raw_backtrace ())
  in
  check_names "raises_deep_down" backtrace

exception Task_failed

let unawaited_task_failure () =
  let pool = Braid_pool.create ~domains:1 () in
  let failed = Braid_pool.async pool (fun () -> raise Task_failed) in
  let awaited = Braid_pool.async pool (fun () -> failwith "awaited") in
  (match Promise.await awaited with
  | () -> Alcotest.fail "expected the task's failure"
  | exception Failure _ -> ());
  ignore (Braid_pool.async pool (fun () -> 1) : int Promise.t);
  Alcotest.check_raises "shutdown reports the failure nobody awaited"
    Task_failed (fun () -> Braid_pool.shutdown pool);
  Alcotest.(check bool)
    "the promise still holds it" true
    (Promise.peek failed = Some (Error Task_failed))

let observed_failures_are_not_reported () =
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let peeked = Braid_pool.async pool (fun () -> raise Task_failed) in
  let awaited = Braid_pool.async pool (fun () -> raise Task_failed) in
  (try Promise.await awaited with Task_failed -> ());
  (try Promise.await peeked with Task_failed -> ());
  (* A task cancelled with its submitter is no failure either. *)
  Braid_fifo.run (fun () ->
      let p = filled_later () in
      let submitter =
        Braid.Fiber.fork (fun () ->
            Braid_pool.run pool (fun () -> Promise.await p))
      in
      Braid.Fiber.cancel submitter;
      match Braid.Fiber.join submitter with
      | () | (exception Braid.Cancelled) -> ())

let several_failures_keep_backtraces () =
  match
    Braid_fifo.run (fun () ->
        ignore (Braid.Fiber.fork (fun () -> raises_deep_down ()));
        ignore (Braid.Fiber.fork (fun () -> failwith "two")))
  with
  | () -> Alcotest.fail "expected Multiple"
  | exception Braid.Fiber.Multiple [ (Failure _, first); (Failure _, _) ] ->
      check_names "raises_deep_down" (Printexc.raw_backtrace_to_string first)

let () =
  Printexc.record_backtrace true;
  Alcotest.run "failures"
    [
      ( "backtraces after a suspension",
        [
          Alcotest.test_case "IO loop" `Quick io_loop;
          Alcotest.test_case "pool task" `Quick pool_task;
          Alcotest.test_case "Lwt bridge" `Quick lwt_fiber;
        ] );
      ( "never lost",
        [
          Alcotest.test_case "promise keeps the backtrace" `Quick
            promise_keeps_backtrace;
          Alcotest.test_case "a task failure nobody awaits" `Quick
            unawaited_task_failure;
          Alcotest.test_case "observed failures are not reported" `Quick
            observed_failures_are_not_reported;
          Alcotest.test_case "Multiple keeps backtraces" `Quick
            several_failures_keep_backtraces;
        ] );
    ]
