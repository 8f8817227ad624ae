(* Several domains: one loop per domain sharing a port, failures across
   domains, and resumers on other domains (a pool task, a bare domain) waking
   IO fibers while the loop keeps serving. *)

open Braid_io
open Common
module Promise = Braid_sync.Promise

(* Two loops listen on one port with SO_REUSEPORT. Clients connect until both
   have answered; each server replies with its domain number. The kernel
   picks a listener per connection by hashing the client's port, so a run
   where one listener never gets any of hundreds of connections would mean
   it is not listening. *)
let reuse_port_shares_a_port () =
  let port = Promise.create () in
  let listening = Array.init 2 (fun _ -> Promise.create ()) in
  let stop = Promise.create () in
  let served = Array.init 2 (fun _ -> Atomic.make 0) in
  let serve ~sw ~domain listener =
    Fiber.fork ~sw (fun () ->
        Switch.run (fun sw ->
            while true do
              Net.accept_fork ~sw ~on_error:raise listener (fun client _ ->
                  Atomic.incr served.(domain);
                  Net.write_string client (string_of_int domain))
            done))
  in
  let stop_serving server =
    Fiber.cancel server;
    match Fiber.join server with () -> () | exception Braid.Cancelled -> ()
  in
  let answered =
    run_domains ~domains:2 @@ fun ~domain ->
    within "reuse_port" @@ fun () ->
    Switch.run @@ fun sw ->
    let addr =
      if domain = 0 then loopback else Net.tcp "127.0.0.1" (Promise.await port)
    in
    let listener = Net.listen ~sw ~reuse_port:true addr in
    if domain = 0 then Promise.fill port (port_of (Net.local_addr listener));
    Promise.fill listening.(domain) ();
    let server = serve ~sw ~domain listener in
    if domain = 1 then (
      Promise.await stop;
      stop_serving server;
      [])
    else (
      Array.iter Promise.await listening;
      let seen = Array.make 2 false in
      let rec connect_until_both attempts =
        if attempts > 0 && not (seen.(0) && seen.(1)) then (
          Switch.run (fun sw ->
              let s = Net.connect ~sw (Net.local_addr listener) in
              let buf = Bytes.create 1 in
              read_exactly s buf 1;
              seen.(int_of_string (Bytes.to_string buf)) <- true);
          connect_until_both (attempts - 1))
      in
      connect_until_both 1000;
      Promise.fill stop ();
      stop_serving server;
      Array.to_list seen)
  in
  Alcotest.(check (list (list bool)))
    "both loops answered"
    [ [ true; true ]; [] ]
    answered;
  Alcotest.(check bool)
    "both loops accepted" true
    (Atomic.get served.(0) > 0 && Atomic.get served.(1) > 0)

let results_in_domain_order () =
  Alcotest.(check (list int))
    "one result per domain" [ 0; 10; 20 ]
    (run_domains ~domains:3 (fun ~domain ->
         Time.sleep 0.001;
         domain * 10))

exception Boom

let failure_cancels_other_domains () =
  let cancelled = Atomic.make 0 in
  match
    run_domains ~domains:3 (fun ~domain ->
        within "cancelled by a failure" @@ fun () ->
        if domain = 1 then (
          Time.sleep 0.01;
          raise Boom)
        else
          try Time.sleep 3600.
          with Braid.Cancelled ->
            Atomic.incr cancelled;
            raise Braid.Cancelled)
  with
  | _ -> Alcotest.fail "run_domains returned despite a failure"
  | exception Boom ->
      Alcotest.(check int)
        "the two others were cancelled" 2 (Atomic.get cancelled)

(* Clients exchanging messages with the echo server: proof the loop runs. *)
let exchange addr ~clients ~rounds =
  let done_ = ref 0 in
  Switch.run (fun sw ->
      for _ = 1 to clients do
        ignore
          (Fiber.fork ~sw (fun () ->
               let s = Net.connect ~sw addr in
               let buf = Bytes.create 64 in
               for _ = 1 to rounds do
                 Net.write_all s buf 0 64;
                 read_exactly s buf 64;
                 incr done_
               done))
      done);
  !done_

let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

(* A stand-in for [Braid_pool.async pool f]: a worker domain computes [f ()]
   and fills the promise. Switching to the real pool is this one function
   (plus [Braid_pool.create]/[shutdown] around the test). *)
let pool_async f =
  let promise = Promise.create () in
  let worker =
    Domain.spawn (fun () ->
        match f () with
        | v -> Promise.fill promise v
        | exception e -> Promise.fill_error promise e)
  in
  (promise, fun () -> Domain.join worker)

(* An IO fiber awaits a pool task's promise; the task does not finish until
   the other IO fibers have exchanged 1,000 messages, which they could not do
   if awaiting blocked the loop. Then the task's completion, on a worker
   domain, wakes the loop through its eventfd. *)
let pool_promise_while_serving () =
  run @@ fun () ->
  within "pool promise" @@ fun () ->
  with_echo_server @@ fun addr ->
  Switch.run @@ fun sw ->
  let go = Promise.create () in
  let task, join_worker =
    pool_async (fun () ->
        Promise.await go;
        fib 25)
  in
  let awaiter = Fiber.fork ~sw (fun () -> Promise.await task) in
  settle ();
  Alcotest.(check int)
    "served while a fiber awaits the pool" 1_000
    (exchange addr ~clients:10 ~rounds:100);
  Alcotest.(check bool) "the awaiter still waits" false (Fiber.is_done awaiter);
  Promise.fill go ();
  Alcotest.(check int) "the pool's result" (fib 25) (Fiber.join awaiter);
  join_worker ()

(* The same with a bare domain as the filler: the loop is asleep in
   epoll_wait when the promise is filled. *)
let bare_domain_wakes_the_loop () =
  run @@ fun () ->
  within "bare domain" @@ fun () ->
  Switch.run @@ fun sw ->
  let go = Promise.create () and answer = Promise.create () in
  let worker =
    Domain.spawn (fun () ->
        Promise.await go;
        Promise.fill answer (fib 20))
  in
  let awaiter = Fiber.fork ~sw (fun () -> Promise.await answer) in
  settle ();
  Promise.fill go ();
  Alcotest.(check int)
    "filled from another domain" (fib 20) (Fiber.join awaiter);
  Domain.join worker

(* CPU time of the calling thread, from the scheduler's accounting. *)
let thread_cpu_s () =
  let path = Printf.sprintf "/proc/self/task/%d/schedstat" (Unix.getpid ()) in
  match In_channel.with_open_text path In_channel.input_line with
  | Some line -> Scanf.sscanf line "%f" Fun.id /. 1e9
  | None -> Alcotest.fail "no schedstat"

(* After a resumption from another domain the loop polls briefly before
   sleeping. While it does, it must still serve descriptors and fire timers,
   and a long wait afterwards must sleep, not spin: 5,000 quick promise
   round trips with a worker domain run next to echo exchanges and 1 ms
   sleeps; then a 300 ms sleep right after a foreign answer costs the loop's
   thread almost no CPU (only the first microseconds of spinning). The main
   thread runs the loop, so its CPU time is the loop's. *)
let quick_foreign_answers_while_serving () =
  run @@ fun () ->
  within "quick foreign answers" @@ fun () ->
  with_echo_server @@ fun addr ->
  Switch.run @@ fun sw ->
  let rounds = 5_000 in
  let request : int Promise.t option Atomic.t = Atomic.make None in
  let worker =
    Domain.spawn (fun () ->
        let rec serve i =
          if i < rounds then
            match Atomic.exchange request None with
            | Some p ->
                Promise.fill p i;
                serve (i + 1)
            | None -> serve i
        in
        serve 0)
  in
  let sleeper =
    Fiber.fork ~sw (fun () ->
        for _ = 1 to 20 do
          Time.sleep 0.001
        done)
  in
  let asker =
    Fiber.fork ~sw (fun () ->
        for i = 0 to rounds - 1 do
          let p = Promise.create () in
          Atomic.set request (Some p);
          if Promise.await p <> i then Alcotest.fail "answers out of order"
        done)
  in
  Alcotest.(check int)
    "served meanwhile" 1_000
    (exchange addr ~clients:10 ~rounds:100);
  Fiber.join asker;
  Fiber.join sleeper;
  Domain.join worker;
  (* One more foreign answer, so that the sleep starts within the spinning
     window. *)
  let last = Promise.create () in
  let filler = Domain.spawn (fun () -> Promise.fill last ()) in
  Promise.await last;
  let cpu0 = thread_cpu_s () in
  Time.sleep 0.3;
  let cpu = thread_cpu_s () -. cpu0 in
  Domain.join filler;
  if cpu > 0.1 then Alcotest.failf "an idle 300 ms cost %.3f s of CPU" cpu

(* Another domain closes a socket a fiber of this loop is blocked reading:
   the loop closes it and wakes the reader with EBADF. *)
let close_from_another_domain () =
  run @@ fun () ->
  within "foreign close" @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Net.listen ~sw loopback in
  let s = Net.connect ~sw (Net.local_addr listener) in
  let reader = Fiber.fork ~sw (fun () -> read_outcome s) in
  settle ();
  let closer = Domain.spawn (fun () -> Net.close s) in
  Alcotest.(check string) "the reader's outcome" "EBADF" (Fiber.join reader);
  Domain.join closer;
  Alcotest.(check bool) "closed" false (Fd.is_open s);
  check_no_waiters "after the foreign close"

(* A socket belongs to its loop: another loop's fibers may not use it, even
   when the operation would not need to wait (data is there). *)
let socket_of_another_loop () =
  let escaped = Promise.create () and release = Promise.create () in
  let owner =
    Domain.spawn (fun () ->
        run (fun () ->
            Switch.run (fun sw ->
                let listener = Net.listen ~sw loopback in
                let c = Net.connect ~sw (Net.local_addr listener) in
                let s, _ = Net.accept ~sw listener in
                Net.write_string c "ready";
                Promise.fill escaped (listener, s);
                Promise.await release)))
  in
  let refused name f =
    match f () with
    | _ -> Alcotest.failf "%s on another loop's socket" name
    | exception Invalid_argument _ -> ()
  in
  run (fun () ->
      let listener, s = Promise.await escaped in
      refused "accept" (fun () ->
          Switch.run (fun sw -> ignore (Net.accept ~sw listener)));
      refused "read" (fun () -> ignore (Net.read_into s (Bytes.create 5) 0 5));
      refused "write" (fun () -> Net.write_string s "x"));
  Promise.fill release ();
  Domain.join owner

let () =
  let case name f = Alcotest.test_case name `Quick f in
  Alcotest.run "domains"
    [
      ( "run_domains",
        [
          case "two loops accept on one port (SO_REUSEPORT)"
            reuse_port_shares_a_port;
          case "results in domain order" results_in_domain_order;
          case "a failure cancels the other domains"
            failure_cancels_other_domains;
        ] );
      ( "cross-domain",
        [
          case "pool promise awaited while serving" pool_promise_while_serving;
          case "a bare domain wakes the loop" bare_domain_wakes_the_loop;
          case "quick foreign answers while serving and sleeping"
            quick_foreign_answers_while_serving;
          case "close from another domain" close_from_another_domain;
          case "a socket of another loop" socket_of_another_loop;
        ] );
    ]
