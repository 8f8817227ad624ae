(* Braid_web.Hub: publishers and subscribers on different domains, the
   slow-subscriber policy, unsubscribing (by call, by cancellation) waking a
   blocked receiver. *)

open Braid_web

let receive_n s n =
  List.init n (fun _ ->
      match Hub.receive s with
      | Ok m -> m
      | Error _ -> Alcotest.fail "subscription ended early")

(* Waits (spinning, with short sleeps) until [p ()]: the other domain's
   fibers need time to subscribe or block. *)
let wait_until ?(timeout = 10.) what p =
  let deadline = Unix.gettimeofday () +. timeout in
  while not (p ()) do
    if Unix.gettimeofday () > deadline then Alcotest.failf "timed out: %s" what;
    Unix.sleepf 0.001
  done

(* Two subscribers, each a fiber of a scheduler on a domain of its own; two
   publishers, on the main domain and a third one. Each subscriber receives
   every message, each publisher's in order. *)
let test_across_domains () =
  let hub = Hub.create ~capacity:1000 () in
  let per_publisher = 300 in
  let subscriber () =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            Hub.with_subscription hub (fun s -> receive_n s (2 * per_publisher))))
  in
  let a = subscriber () and b = subscriber () in
  wait_until "two subscribers" (fun () -> Hub.subscribers hub = 2);
  let publish tag =
    for i = 1 to per_publisher do
      Hub.publish hub (tag, i)
    done
  in
  let other = Domain.spawn (fun () -> publish "other") in
  publish "main";
  Domain.join other;
  List.iter
    (fun d ->
      let got = Domain.join d in
      Alcotest.(check int) "all received" (2 * per_publisher) (List.length got);
      List.iter
        (fun tag ->
          let mine =
            List.filter_map (fun (t, i) -> if t = tag then Some i else None) got
          in
          Alcotest.(check (list int))
            (tag ^ "'s in order")
            (List.init per_publisher (fun i -> i + 1))
            mine)
        [ "main"; "other" ])
    [ a; b ];
  Alcotest.(check int) "both left" 0 (Hub.subscribers hub)

(* A subscriber that does not read is dropped at the first message that
   finds its queue full; the publisher is not held up and the others still
   receive. *)
let test_slow_subscriber () =
  let hub = Hub.create ~capacity:2 () in
  let overflows = Atomic.make 0 in
  let slow = Hub.subscribe ~on_overflow:(fun () -> Atomic.incr overflows) hub in
  let fast = Hub.subscribe hub in
  Hub.publish hub 1;
  Hub.publish hub 2;
  Alcotest.(check (list int)) "fast reads" [ 1; 2 ] (receive_n fast 2);
  Hub.publish hub 3;
  Hub.publish hub 4;
  Alcotest.(check int) "overflow once" 1 (Atomic.get overflows);
  Alcotest.(check int) "slow dropped" 1 (Hub.subscribers hub);
  Alcotest.(check bool)
    "slow ends, queued messages dropped" true
    (Hub.receive slow = Error Hub.Too_slow);
  Alcotest.(check (list int)) "fast unaffected" [ 3; 4 ] (receive_n fast 2);
  Hub.unsubscribe fast;
  Alcotest.(check bool)
    "unsubscribed" true
    (Hub.receive fast = Error Hub.Unsubscribed)

(* Unsubscribing from another domain wakes the fiber blocked in receive: no
   lost wake-up. *)
let test_unsubscribe_wakes_receiver () =
  let hub = Hub.create () in
  let s = Hub.subscribe hub in
  let waiting = Atomic.make false in
  let d =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            Atomic.set waiting true;
            Hub.receive s))
  in
  wait_until "receiver started" (fun () -> Atomic.get waiting);
  Unix.sleepf 0.01;
  Hub.unsubscribe s;
  Alcotest.(check bool)
    "woken with Unsubscribed" true
    (Domain.join d = Error Hub.Unsubscribed);
  Alcotest.(check int) "gone" 0 (Hub.subscribers hub);
  Hub.publish hub 1

(* A fiber cancelled in receive leaves the hub (with_subscription), and a
   message published meanwhile is not lost to the others. *)
let test_cancel_unsubscribes () =
  let hub = Hub.create () in
  Braid_fifo.run (fun () ->
      let other = Hub.subscribe hub in
      let fiber =
        Braid.Fiber.fork (fun () ->
            Hub.with_subscription hub (fun s -> Hub.receive s))
      in
      Braid.Fiber.yield ();
      Alcotest.(check int) "subscribed" 2 (Hub.subscribers hub);
      Braid.Fiber.cancel fiber;
      (match Braid.Fiber.join fiber with
      | _ -> Alcotest.fail "not cancelled"
      | exception Braid.Cancelled -> ());
      Alcotest.(check int) "left on cancel" 1 (Hub.subscribers hub);
      Hub.publish hub "after";
      Alcotest.(check bool)
        "other receives" true
        (Hub.receive other = Ok "after"))

let test_second_receiver_refused () =
  let hub = Hub.create () in
  Braid_fifo.run (fun () ->
      let s = Hub.subscribe hub in
      let first = Braid.Fiber.fork (fun () -> Hub.receive s) in
      Braid.Fiber.yield ();
      Alcotest.check_raises "second receiver"
        (Invalid_argument "Hub.receive: another fiber is receiving") (fun () ->
          ignore (Hub.receive s));
      Hub.publish hub 7;
      Alcotest.(check bool) "first gets it" true (Braid.Fiber.join first = Ok 7))

(* One hub per key, the same from every domain. *)
let topics () =
  let hubs = Hub.Topics.create ~capacity:4 () in
  let from_other_domain =
    Domain.join (Domain.spawn (fun () -> Hub.Topics.hub hubs "ada"))
  in
  Alcotest.(check bool)
    "the same hub for a key" true
    (Hub.Topics.hub hubs "ada" == from_other_domain);
  Alcotest.(check bool)
    "another for another key" false
    (Hub.Topics.hub hubs "grace" == from_other_domain);
  Alcotest.check_raises "capacity checked"
    (Invalid_argument "Hub.Topics.create: capacity < 1") (fun () ->
      ignore (Hub.Topics.create ~capacity:0 ()))

let () =
  Alcotest.run "hub"
    [
      ( "hub",
        [
          Alcotest.test_case "topics" `Quick topics;
          Alcotest.test_case "broadcast across domains" `Quick
            test_across_domains;
          Alcotest.test_case "slow subscriber dropped" `Quick
            test_slow_subscriber;
          Alcotest.test_case "unsubscribe wakes a receiver" `Quick
            test_unsubscribe_wakes_receiver;
          Alcotest.test_case "cancellation unsubscribes" `Quick
            test_cancel_unsubscribes;
          Alcotest.test_case "one receiver at a time" `Quick
            test_second_receiver_refused;
        ] );
    ]
