(* Unit tests of the work-stealing pool: submission from everywhere, tasks
   that suspend, exceptions, cancellation of awaiters, parallel loops,
   shutdown, idle parking, and the thesis's Figure 2.2 composition. *)

open Braid_sync
module Fiber = Braid.Fiber
module Pool = Braid_pool

let check_int = Alcotest.(check int)
let check_bool = Alcotest.(check bool)

(* A deadlock must fail the test, not hang the job: each case runs under a
   deadline far above its normal duration (not a timing assertion). *)
let deadline_s = 60.

let with_deadline name f () =
  let finished = Atomic.make false in
  let _ =
    Thread.create
      (fun () ->
        let t0 = Unix.gettimeofday () in
        while
          (not (Atomic.get finished)) && Unix.gettimeofday () -. t0 < deadline_s
        do
          Thread.delay 0.05
        done;
        if not (Atomic.get finished) then (
          Printf.eprintf
            "test_pool: %S still running after %.0f s: deadlock?\n%!" name
            deadline_s;
          Unix._exit 2))
      ()
  in
  Fun.protect ~finally:(fun () -> Atomic.set finished true) f

let test name f = Alcotest.test_case name `Quick (with_deadline name f)
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

(* Recursive fib with nested async/await down to [cutoff]. *)
let rec pfib pool ~cutoff n =
  if n < cutoff then fib n
  else
    let a = Pool.async pool (fun () -> pfib pool ~cutoff (n - 1)) in
    let b = pfib pool ~cutoff (n - 2) in
    Promise.await a + b

let expect_invalid_arg name f =
  match f () with
  | _ -> Alcotest.failf "%s: expected Invalid_argument" name
  | exception Invalid_argument _ -> ()

(* Submission from everywhere *)

let from_bare_thread () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  check_int "size" 2 (Pool.size pool);
  check_int "run" 42 (Pool.run pool (fun () -> 6 * 7));
  let promises = List.init 100 (fun i -> Pool.async pool (fun () -> i * i)) in
  List.iteri (fun i p -> check_int "async" (i * i) (Promise.await p)) promises

let from_fifo_fibers () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let results =
    Braid_fifo.run (fun () ->
        List.init 20 (fun i ->
            Fiber.fork (fun () -> Pool.run pool (fun () -> fib i)))
        |> List.map Fiber.join)
  in
  Alcotest.(check (list int)) "fibs" (List.init 20 fib) results

let from_domains_and_threads () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let submit k () =
    List.init 200 (fun i -> Pool.async pool (fun () -> (k * 1000) + i))
    |> List.mapi (fun i p -> Promise.await p = (k * 1000) + i)
    |> List.for_all Fun.id
  in
  let domains = List.init 2 (fun k -> Domain.spawn (submit k)) in
  let ok = Atomic.make true in
  let threads =
    List.init 3 (fun k ->
        Thread.create
          (fun () -> if not (submit (k + 10) ()) then Atomic.set ok false)
          ())
  in
  List.iter Thread.join threads;
  check_bool "threads" true (Atomic.get ok);
  List.iter (fun d -> check_bool "domain" true (Domain.join d)) domains

let nested_async () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  check_int "pfib 25" (fib 25)
    (Pool.run pool (fun () -> pfib pool ~cutoff:10 25));
  check_int "run inside a task" 55
    (Pool.run pool (fun () -> Pool.run pool (fun () -> fib 10)))

(* Tasks that suspend *)

(* With one worker, a task parked on a promise must not hold the worker:
   tasks submitted after it run and finish first. *)
let parked_task_frees_worker () =
  Pool.with_pool ~domains:1 @@ fun pool ->
  let gate = Promise.create () in
  let parked = Pool.async pool (fun () -> Promise.await gate + 1) in
  let others = List.init 10 (fun i -> Pool.async pool (fun () -> fib i)) in
  List.iteri (fun i p -> check_int "other" (fib i) (Promise.await p)) others;
  check_bool "still parked" true (Promise.peek parked = None);
  Promise.fill gate 41;
  check_int "resumed" 42 (Promise.await parked)

(* Every kind of structure blocks only the task: an MVar ping-pong between
   two tasks, and a switch with forked fibers, on one worker. *)
let structures_inside_tasks () =
  Pool.with_pool ~domains:1 @@ fun pool ->
  let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
  let n = 1_000 in
  let echo =
    Pool.async pool (fun () ->
        for _ = 1 to n do
          Mvar.put pong (Mvar.take ping + 1)
        done)
  in
  let total =
    Pool.run pool (fun () ->
        let sum = ref 0 in
        for i = 1 to n do
          Mvar.put ping i;
          sum := !sum + Mvar.take pong
        done;
        !sum)
  in
  Promise.await echo;
  check_int "ping-pong" ((n * (n + 1) / 2) + n) total;
  let forked =
    Pool.run pool (fun () ->
        Braid.Switch.run (fun sw ->
            let hs =
              List.init 10 (fun i ->
                  Braid.Switch.fork sw (fun () ->
                      Fiber.yield ();
                      i))
            in
            List.fold_left (fun acc h -> acc + Fiber.join h) 0 hs))
  in
  check_int "switch" 45 forked

(* A task that yields in a loop waiting for another task must not keep its
   worker for itself (fairness of the local deque and of the shared queue). *)
let yielding_task_is_fair () =
  Pool.with_pool ~domains:1 @@ fun pool ->
  let flag = Atomic.make false in
  let spinner =
    Pool.async pool (fun () ->
        let n = ref 0 in
        while not (Atomic.get flag) do
          incr n;
          Fiber.yield ()
        done;
        !n)
  in
  (* Queued behind the spinner on the same worker: from outside the pool,
     and from inside a task (onto the worker's own deque). *)
  let setter =
    Pool.async pool (fun () ->
        let inner = Pool.async pool (fun () -> Atomic.set flag true) in
        Promise.await inner)
  in
  Promise.await setter;
  check_bool "spinner saw the flag" true (Promise.await spinner >= 0)

(* Exceptions and cancellation *)

exception Boom of int

let exceptions_reach_awaiters () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let p = Pool.async pool (fun () -> raise (Boom 1)) in
  Alcotest.check_raises "await from a thread" (Boom 1) (fun () ->
      Promise.await p);
  Alcotest.check_raises "await again" (Boom 1) (fun () -> Promise.await p);
  Alcotest.check_raises "run" (Boom 2) (fun () ->
      Pool.run pool (fun () -> raise (Boom 2)));
  Alcotest.check_raises "from a nested task" (Boom 3) (fun () ->
      Pool.run pool (fun () ->
          Promise.await (Pool.async pool (fun () -> raise (Boom 3)))));
  let from_fibers =
    Braid_fifo.run (fun () ->
        List.init 4 (fun _ ->
            Fiber.fork (fun () ->
                match Promise.await p with
                | () -> false
                | exception Boom 1 -> true))
        |> List.for_all Fiber.join)
  in
  check_bool "several fibers" true from_fibers;
  check_int "pool still works" 3 (Pool.run pool (fun () -> 1 + 2))

let cancelling_awaiter_keeps_task () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let gate = Promise.create () in
  let task_ran = Atomic.make false in
  let p =
    Pool.async pool (fun () ->
        Promise.await gate;
        Atomic.set task_ran true;
        42)
  in
  Braid_fifo.run (fun () ->
      let waiter = Fiber.fork (fun () -> Promise.await p) in
      let runner =
        Fiber.fork (fun () -> Pool.run pool (fun () -> Promise.await gate))
      in
      Fiber.yield ();
      Fiber.cancel waiter;
      Fiber.cancel runner;
      (match Fiber.join waiter with
      | _ -> Alcotest.fail "waiter: expected Cancelled"
      | exception Braid.Cancelled -> ());
      match Fiber.join runner with
      | () -> Alcotest.fail "runner: expected Cancelled"
      | exception Braid.Cancelled -> ());
  check_bool "task still pending" false (Atomic.get task_ran);
  Promise.fill gate ();
  check_int "task completed anyway" 42 (Promise.await p);
  check_bool "task ran" true (Atomic.get task_ran)

(* A task is cancelled with its submitter, at its blocking calls, and so
   are the tasks it submitted; one submitted inside [protect] is not. *)
let cancelled_with_submitter () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let spins = Atomic.make 0 and protected_spins = Atomic.make 0 in
  let stop = Atomic.make false in
  let spin counter () =
    while not (Atomic.get stop) do
      Atomic.incr counter;
      Fiber.yield ()
    done
  in
  let rec outcome p =
    match Promise.peek p with
    | Some r -> r
    | None ->
        Thread.delay 0.001;
        outcome p
  in
  let tied = ref None and child = ref None and kept = ref None in
  Braid_fifo.run (fun () ->
      Braid.Fiber.Scope.run (fun scope ->
          tied :=
            Some
              (Pool.async pool (fun () ->
                   child := Some (Pool.async pool (spin spins));
                   spin spins ()));
          kept :=
            Some
              (Fiber.protect (fun () -> Pool.async pool (spin protected_spins)));
          while Atomic.get spins < 100 do
            Fiber.yield ()
          done;
          Braid.Fiber.Scope.cancel scope));
  let cancelled name p =
    match outcome (Option.get p) with
    | Error Braid.Cancelled -> ()
    | Error e -> Alcotest.failf "%s: raised %s" name (Printexc.to_string e)
    | Ok () -> Alcotest.failf "%s: finished" name
  in
  cancelled "the task, at its next yield" !tied;
  cancelled "the task it submitted" !child;
  let before = Atomic.get protected_spins in
  while Atomic.get protected_spins < before + 100 do
    Thread.delay 0.001
  done;
  check_bool "the protected one goes on" true
    (Promise.peek (Option.get !kept) = None);
  Atomic.set stop true;
  check_bool "and finishes when told" true (outcome (Option.get !kept) = Ok ())

(* Parallel loops *)

let parallel_for_each_index_once () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let check ?chunk_size ~start ~finish () =
    let n = max 0 (finish - start + 1) in
    let hits = Array.init n (fun _ -> Atomic.make 0) in
    Pool.parallel_for pool ?chunk_size ~start ~finish (fun i ->
        Atomic.incr hits.(i - start));
    Array.iteri
      (fun k h ->
        if Atomic.get h <> 1 then
          Alcotest.failf "index %d of [%d, %d] visited %d times" (start + k)
            start finish (Atomic.get h))
      hits
  in
  check ~start:0 ~finish:9999 ();
  check ~start:(-17) ~finish:123 ~chunk_size:1 ();
  check ~start:5 ~finish:5 ();
  check ~start:5 ~finish:4 ();
  check ~start:3 ~finish:1000 ~chunk_size:7 ();
  check ~start:0 ~finish:99 ~chunk_size:1000 ();
  expect_invalid_arg "chunk_size 0" (fun () ->
      Pool.parallel_for pool ~chunk_size:0 ~start:0 ~finish:10 ignore)

let parallel_loops_nest_and_compose () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let inner_sum i =
    Pool.parallel_for_reduce pool ~chunk_size:8 ~start:0 ~finish:i
      ~combine:( + ) ~init:0 Fun.id
  in
  let expected = List.init 200 (fun i -> i * (i + 1) / 2) in
  let nested =
    Pool.parallel_for_reduce pool ~chunk_size:4 ~start:0 ~finish:199
      ~combine:( @ ) ~init:[] (fun i -> [ inner_sum i ])
  in
  Alcotest.(check (list int)) "nested reduce" expected nested;
  let from_fibers =
    Braid_fifo.run (fun () ->
        List.init 5 (fun k ->
            Fiber.fork (fun () ->
                Pool.parallel_for_reduce pool ~start:1 ~finish:(1000 * k)
                  ~combine:( + ) ~init:0 Fun.id))
        |> List.map Fiber.join)
  in
  Alcotest.(check (list int))
    "from fibers"
    (List.init 5 (fun k -> 1000 * k * ((1000 * k) + 1) / 2))
    from_fibers

(* A failing body makes the loop raise, but only after every part has
   finished: no body runs after the loop returned. *)
let parallel_for_exception () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let running = Atomic.make 0 and ran = Atomic.make 0 in
  (match
     Pool.parallel_for pool ~chunk_size:1 ~start:0 ~finish:999 (fun i ->
         Atomic.incr running;
         Fun.protect
           ~finally:(fun () ->
             Atomic.incr ran;
             Atomic.decr running)
           (fun () ->
             ignore (Sys.opaque_identity (fib 12));
             if i mod 97 = 13 then raise (Boom i)))
   with
  | () -> Alcotest.fail "expected Boom"
  | exception Boom i -> check_int "a failing index" 13 (i mod 97));
  check_int "no body still running" 0 (Atomic.get running);
  let after = Atomic.get ran in
  Thread.delay 0.01;
  check_int "no body ran after" after (Atomic.get ran);
  Alcotest.check_raises "reduce" (Boom 5) (fun () ->
      ignore
        (Pool.parallel_for_reduce pool ~chunk_size:2 ~start:0 ~finish:100
           ~combine:( + ) ~init:0 (fun i -> if i = 5 then raise (Boom 5) else i)))

(* QCheck: parallel_for_reduce is the sequential fold *)

let reduce_is_fold pool =
  let open QCheck in
  let gen =
    quad (int_range (-100) 100) (int_range (-1) 400)
      (option (int_range 1 50))
      small_int
  in
  Test.make ~count:300 ~name:"parallel_for_reduce = sequential fold" gen
    (fun (start, length, chunk_size, seed) ->
      let finish = start + length - 1 in
      let value i = Hashtbl.hash (seed, i) mod 1000 in
      let indices = List.init (max 0 length) (fun k -> start + k) in
      let sum =
        Pool.parallel_for_reduce pool ?chunk_size ~start ~finish ~combine:( + )
          ~init:0 value
      in
      (* Associative but not commutative: the order of parts must be kept. *)
      let text =
        Pool.parallel_for_reduce pool ?chunk_size ~start ~finish ~combine:( ^ )
          ~init:"" (fun i -> string_of_int (value i) ^ ",")
      in
      let largest =
        Pool.parallel_for_reduce pool ?chunk_size ~start ~finish ~combine:max
          ~init:min_int value
      in
      sum = List.fold_left (fun acc i -> acc + value i) 0 indices
      && text
         = List.fold_left
             (fun acc i -> acc ^ string_of_int (value i) ^ ",")
             "" indices
      && largest
         = List.fold_left (fun acc i -> max acc (value i)) min_int indices)

let qcheck_reduce () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  QCheck.Test.check_exn
    ~rand:(Random.State.make [| 2024 |])
    (reduce_is_fold pool)

(* Shutdown *)

let shutdown_finishes_pending_work () =
  let pool = Pool.create ~domains:2 () in
  let promises =
    List.init 500 (fun i ->
        Pool.async pool (fun () ->
            (* Work submitted while the pool drains is accepted from tasks. *)
            let inner = Pool.async pool (fun () -> fib (i mod 15)) in
            Promise.await inner + 1))
  in
  Pool.shutdown pool;
  List.iteri
    (fun i p ->
      match Promise.peek p with
      | Some (Ok v) ->
          check_int "done before shutdown returned" (fib (i mod 15) + 1) v
      | Some (Error e) -> raise e
      | None -> Alcotest.failf "task %d dropped by shutdown" i)
    promises;
  expect_invalid_arg "async after shutdown" (fun () ->
      Pool.async pool (fun () -> ()));
  expect_invalid_arg "run after shutdown" (fun () -> Pool.run pool Fun.id);
  Pool.shutdown pool

(* A task parked on a structure keeps the pool alive: shutdown waits for it,
   and the task may still submit subtasks when resumed. *)
let shutdown_waits_for_parked_tasks () =
  let pool = Pool.create ~domains:2 () in
  let gate = Promise.create () in
  let parked =
    Pool.async pool (fun () ->
        Promise.await gate;
        Pool.parallel_for_reduce pool ~chunk_size:1 ~start:1 ~finish:100
          ~combine:( + ) ~init:0 Fun.id)
  in
  let stopped = Atomic.make false in
  let stopper =
    Thread.create
      (fun () ->
        Pool.shutdown pool;
        Atomic.set stopped true)
      ()
  in
  (* Outside submissions are refused once the stopper has begun. *)
  let rec until_refused () =
    match Pool.async pool (fun () -> ()) with
    | accepted ->
        Promise.await accepted;
        Thread.delay 0.001;
        until_refused ()
    | exception Invalid_argument _ -> ()
  in
  until_refused ();
  (* Give a wrong shutdown time to finish (not needed by a correct one). *)
  Thread.delay 0.05;
  check_bool "shutdown waits for the parked task" false (Atomic.get stopped);
  Promise.fill gate ();
  Thread.join stopper;
  check_bool "stopped" true (Atomic.get stopped);
  check_bool "parked task finished, with its subtasks" true
    (Promise.peek parked = Some (Ok 5050));
  (* Several callers wait for the same shutdown. *)
  Pool.shutdown pool

let shutdown_misuse_and_failures () =
  expect_invalid_arg "no domains" (fun () -> Pool.create ~domains:0 ());
  let pool = Pool.create ~domains:1 () in
  Alcotest.check_raises "shutdown from a task"
    (Invalid_argument "Braid_pool.shutdown: called from a task of the same pool")
    (fun () -> Pool.run pool (fun () -> Pool.shutdown pool));
  (* A fiber forked in a task, failing and never joined, is not lost. *)
  Pool.run pool (fun () -> ignore (Fiber.fork (fun () -> raise (Boom 7))));
  let joined_failure =
    Pool.run pool (fun () ->
        let h = Fiber.fork (fun () -> raise (Boom 8)) in
        match Fiber.join h with () -> false | exception Boom 8 -> true)
  in
  check_bool "joined failure" true joined_failure;
  Alcotest.check_raises "unjoined failure reported by shutdown" (Boom 7)
    (fun () -> Pool.shutdown pool);
  Pool.shutdown pool;
  check_int "with_pool" 3
    (Pool.with_pool ~domains:1 (fun p -> Pool.run p (fun () -> 3)));
  Alcotest.check_raises "with_pool re-raises" (Boom 9) (fun () ->
      Pool.with_pool ~domains:1 (fun _ -> raise (Boom 9)))

(* From a fiber, shutdown blocks only that fiber while the pool drains. *)
let shutdown_from_a_fiber () =
  let pool = Pool.create ~domains:2 () in
  let gate = Promise.create () in
  let parked = Pool.async pool (fun () -> Promise.await gate) in
  Braid_fifo.run (fun () ->
      let stopper = Fiber.fork (fun () -> Pool.shutdown pool) in
      for _ = 1 to 100 do
        Fiber.yield ()
      done;
      check_bool "stopper waiting" false (Fiber.is_done stopper);
      Promise.fill gate ();
      Fiber.join stopper);
  check_bool "drained" true (Promise.peek parked = Some (Ok ()))

(* An idle pool parks its workers: over one second it uses far less than
   one core (parking is a correctness property; the figure is in the bench). *)
let idle_pool_parks () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  ignore (Pool.run pool (fun () -> pfib pool ~cutoff:10 20));
  Thread.delay 0.1;
  let cpu () =
    let t = Unix.times () in
    t.tms_utime +. t.tms_stime
  in
  let before = cpu () in
  Thread.delay 1.0;
  let used = cpu () -. before in
  if used > 0.5 then
    Alcotest.failf "idle pool used %.2f s of CPU in 1 s: workers do not park"
      used

(* The thesis's Figure 2.2: fibers of a FIFO scheduler await CPU work on the
   pool while a ticker fiber of the same scheduler keeps running. *)

type event = Submitted of int | Returned of int

let figure_2_2 () =
  let computations = 8 and n = 27 in
  Pool.with_pool ~domains:2 @@ fun pool ->
  (* Only the FIFO scheduler's domain touches these. *)
  let events = ref [] and in_flight = ref 0 and returned = ref 0 in
  let ticks = ref 0 and ticks_in_flight = ref 0 in
  (* Written by pool workers. *)
  let running = Atomic.make 0 and most_running = Atomic.make 0 in
  (* No computation starts before the last one is submitted: were the fibers'
     wait domain-blocking, the first would wait for ever (the watchdog fails
     the test); and however the OS schedules the domains, no result can come
     back before every submission, so the figures below do not depend on
     timing. *)
  let all_submitted = Promise.create () in
  let compute () =
    Promise.await all_submitted;
    let now = Atomic.fetch_and_add running 1 + 1 in
    let rec raise_max () =
      let m = Atomic.get most_running in
      if now > m && not (Atomic.compare_and_set most_running m now) then
        raise_max ()
    in
    raise_max ();
    let v = fib n in
    Atomic.decr running;
    v
  in
  let results =
    Braid_fifo.run (fun () ->
        let ticker =
          Fiber.fork (fun () ->
              while !returned < computations do
                incr ticks;
                if !in_flight > 0 then incr ticks_in_flight;
                Fiber.yield ()
              done)
        in
        let fibers =
          List.init computations (fun i ->
              Fiber.fork (fun () ->
                  events := Submitted i :: !events;
                  incr in_flight;
                  let computation = Pool.async pool compute in
                  if i = computations - 1 then Promise.fill all_submitted ();
                  let v = Promise.await computation in
                  decr in_flight;
                  incr returned;
                  events := Returned i :: !events;
                  v))
        in
        let results = List.map Fiber.join fibers in
        Fiber.join ticker;
        results)
  in
  List.iter (check_int "fib" (fib n)) results;
  let events = List.rev !events in
  let rec submitted_before_first_return = function
    | Submitted _ :: rest -> 1 + submitted_before_first_return rest
    | Returned _ :: _ | [] -> 0
  in
  let pipelined = submitted_before_first_return events in
  Printf.printf
    "figure 2.2: %d ticks, %d while computations were in flight; %d \
     computations submitted before the first result; at most %d running at \
     once on the pool\n\
     %!"
    !ticks !ticks_in_flight pipelined (Atomic.get most_running);
  check_bool "the ticker ran while computations were in flight" true
    (!ticks_in_flight > 0);
  check_int "all computations in flight at once (pipelined)" computations
    pipelined

(* Stress: 100,000 nested async/await tasks on two domains *)

let rec tree pool ~first ~count executed =
  Atomic.incr executed;
  let rest = count - 1 in
  let left = rest / 2 in
  let child first count =
    if count = 0 then None
    else Some (Pool.async pool (fun () -> tree pool ~first ~count executed))
  in
  let l = child (first + 1) left in
  let r = child (first + 1 + left) (rest - left) in
  let value = function None -> 0 | Some p -> Promise.await p in
  first + value l + value r

let stress_nested () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  let n = 100_000 in
  let executed = Atomic.make 0 in
  let sum =
    Promise.await
      (Pool.async pool (fun () -> tree pool ~first:0 ~count:n executed))
  in
  check_int "tasks" n (Atomic.get executed);
  check_int "sum of ids" (n * (n - 1) / 2) sum;
  (* The same from four fibers of another scheduler at once. *)
  let executed = Atomic.make 0 in
  let sums =
    Braid_fifo.run (fun () ->
        List.init 4 (fun k ->
            Fiber.fork (fun () ->
                Pool.run pool (fun () ->
                    tree pool ~first:(k * n / 4) ~count:(n / 4) executed)))
        |> List.map Fiber.join)
  in
  check_int "tasks from fibers" n (Atomic.get executed);
  check_int "sum from fibers" (n * (n - 1) / 2) (List.fold_left ( + ) 0 sums)

let () =
  Test_support.Watchdog.start ~seconds:120. "test_pool";
  Alcotest.run "braid_pool"
    [
      ( "submission",
        [
          test "from a bare thread" from_bare_thread;
          test "from FIFO fibers" from_fifo_fibers;
          test "from domains and threads" from_domains_and_threads;
          test "nested async/await" nested_async;
        ] );
      ( "suspension",
        [
          test "a parked task frees its worker" parked_task_frees_worker;
          test "structures inside tasks" structures_inside_tasks;
          test "a yielding task is fair" yielding_task_is_fair;
        ] );
      ( "failure",
        [
          test "exceptions reach awaiters" exceptions_reach_awaiters;
          test "cancelling an awaiter keeps the task"
            cancelling_awaiter_keeps_task;
          test "cancelled with its submitter" cancelled_with_submitter;
        ] );
      ( "loops",
        [
          test "parallel_for visits each index once"
            parallel_for_each_index_once;
          test "loops nest and compose" parallel_loops_nest_and_compose;
          test "exceptions wait for every part" parallel_for_exception;
          test "QCheck: reduce = fold" qcheck_reduce;
        ] );
      ( "shutdown",
        [
          test "pending work is finished" shutdown_finishes_pending_work;
          test "waits for parked tasks" shutdown_waits_for_parked_tasks;
          test "misuse and failures" shutdown_misuse_and_failures;
          test "from a fiber" shutdown_from_a_fiber;
          test "an idle pool parks" idle_pool_parks;
        ] );
      ("composition", [ test "Figure 2.2" figure_2_2 ]);
      ("stress", [ test "100,000 nested tasks on 2 domains" stress_nested ]);
    ]
