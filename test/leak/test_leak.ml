open Braid_sync
module Fiber = Braid.Fiber

(* [setup ()] runs first, in the same scheduler, and returns the cleanup. *)
let flat ?(setup = fun () -> ignore) name block =
  Braid_fifo.run @@ fun () ->
  let cleanup = setup () in
  (* Cleaned up before a failure propagates: [run] waits for every fiber. *)
  Fun.protect ~finally:cleanup (fun () ->
      Test_support.Leak.stays_flat name (fun () ->
          Test_support.Leak.block_then_cancel block))

let no_setup () = ignore

(* Someone else holds the mutex, or is computing the lazy value, throughout. *)
let hold_mutex m () =
  Mutex.lock m;
  fun () -> Mutex.unlock m

let force_meanwhile l gate () =
  let forcer = Fiber.fork (fun () -> Lazy.force l) in
  Fiber.yield ();
  fun () ->
    Promise.fill gate ();
    Fiber.join forcer

let tests =
  let promise = Promise.create () in
  let empty_mvar = Mvar.create_empty () in
  let full_mvar = Mvar.create 0 in
  let mutex = Mutex.create () in
  let condition = Condition.create () and cond_mutex = Mutex.create () in
  let semaphore = Semaphore.make 0 in
  let channel = Channel.create 0 in
  let gate = Promise.create () in
  let lazy_value = Lazy.from_fun (fun () -> Promise.await gate) in
  [
    ("promise await", no_setup, fun () -> Promise.await promise);
    ("mvar take", no_setup, fun () -> Mvar.take empty_mvar);
    ("mvar put", no_setup, fun () -> Mvar.put full_mvar 1);
    ("mutex lock", hold_mutex mutex, fun () -> Mutex.lock mutex);
    ( "condition wait",
      no_setup,
      fun () ->
        Mutex.protect cond_mutex (fun () -> Condition.wait condition cond_mutex)
    );
    ("semaphore acquire", no_setup, fun () -> Semaphore.acquire semaphore);
    ("channel recv", no_setup, fun () -> ignore (Channel.recv channel));
    ("channel send", no_setup, fun () -> Channel.send channel 1);
    ( "lazy force",
      force_meanwhile lazy_value gate,
      fun () -> Lazy.force lazy_value );
  ]
  |> List.map (fun (name, setup, block) ->
         Alcotest.test_case name `Quick (fun () -> flat ~setup name block))

let () =
  Test_support.Watchdog.start "test_leak";
  Alcotest.run "leak" [ ("block then cancel", tests) ]
