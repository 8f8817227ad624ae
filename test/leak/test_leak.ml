open Braid_sync
module Fiber = Braid.Fiber

let cycles = 1_000_000
let warm_up = 10_000

(* Fewer words than this after a million cycles cannot be a per-cycle leak. *)
let allowed_growth_words = 20_000

let live_words () =
  Gc.full_major ();
  (Gc.stat ()).live_words

(* One cycle: a fiber blocks on the structure, is cancelled, and unwinds. *)
let cycle block =
  let h = Fiber.fork block in
  Fiber.yield ();
  Fiber.cancel h;
  match Fiber.join h with
  | () -> Alcotest.fail "the blocked operation completed"
  | exception Braid.Cancelled -> ()

(* [setup ()] runs first, in the same scheduler, and returns the cleanup. *)
let flat ?(setup = fun () -> ignore) name block =
  Braid_fifo.run @@ fun () ->
  let cleanup = setup () in
  for _ = 1 to warm_up do
    cycle block
  done;
  let before = live_words () in
  for _ = 1 to cycles do
    cycle block
  done;
  let after = live_words () in
  cleanup ();
  if after - before > allowed_growth_words then
    Alcotest.failf "%s: live words grew from %d to %d over %d cycles" name
      before after cycles

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
