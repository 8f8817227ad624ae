(* Every structure used at once by six participants of four kinds: fibers of
   a FIFO scheduler on one domain (0, 1), fibers of another FIFO scheduler on
   a second domain (2, 3), a bare domain (4) and a systhread (5). Even
   participants produce, odd ones consume, so every kind meets every other. *)

open Braid_sync
module Fiber = Braid.Fiber

let participants = 6
let per_producer = 2000

type kind = Fifo_fiber | Bare_domain | Systhread

let kind_of = function
  | 0 | 1 | 2 | 3 -> Fifo_fiber
  | 4 -> Bare_domain
  | _ -> Systhread

(* Lets others run inside a critical section, whatever the caller is. *)
let pause i =
  match kind_of i with
  | Fifo_fiber -> Fiber.yield ()
  | Bare_domain -> Domain.cpu_relax ()
  | Systhread -> Thread.yield ()

let across_schedulers ?(on_fiber = fun _ _ -> ()) work =
  let fifo_domain ids =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            List.map
              (fun i ->
                let h = Fiber.fork (fun () -> work i) in
                on_fiber i h;
                h)
              ids
            |> List.iter (fun h ->
                   try Fiber.join h with Braid.Cancelled -> ())))
  in
  let a = fifo_domain [ 0; 1 ] and b = fifo_domain [ 2; 3 ] in
  let c = Domain.spawn (fun () -> work 4) in
  let t = Thread.create work 5 in
  Domain.join a;
  Domain.join b;
  Domain.join c;
  Thread.join t

let producers =
  List.filter (fun i -> i mod 2 = 0) (List.init participants Fun.id)

let expected =
  List.concat_map
    (fun p -> List.init per_producer (fun j -> (p * per_producer) + j))
    producers

let check_each_once name received =
  let got = List.sort compare (List.concat (Array.to_list received)) in
  Alcotest.(check int)
    (name ^ ": count") (List.length expected) (List.length got);
  Alcotest.(check bool)
    (name ^ ": each value exactly once")
    true (got = expected)

(* Producers send their values; consumers take as many as one producer
   sends. *)
let exchange name ~send ~recv =
  let received = Array.make participants [] in
  across_schedulers (fun i ->
      if i mod 2 = 0 then
        for j = 0 to per_producer - 1 do
          send ((i * per_producer) + j)
        done
      else
        for _ = 1 to per_producer do
          received.(i) <- recv () :: received.(i)
        done);
  check_each_once name received

let mvar () =
  let m = Mvar.create_empty () in
  exchange "mvar" ~send:(Mvar.put m) ~recv:(fun () -> Mvar.take m)

let channel capacity () =
  let c = Channel.create capacity in
  exchange "channel" ~send:(Channel.send c) ~recv:(fun () -> Channel.recv c)

(* A bounded queue from a Mutex and two Conditions. *)
let condition () =
  let m = Mutex.create ()
  and not_empty = Condition.create ()
  and not_full = Condition.create () in
  let q = Queue.create () in
  let send v =
    Mutex.protect m (fun () ->
        while Queue.length q >= 2 do
          Condition.wait not_full m
        done;
        Queue.push v q;
        Condition.signal not_empty)
  in
  let recv () =
    Mutex.protect m (fun () ->
        while Queue.is_empty q do
          Condition.wait not_empty m
        done;
        let v = Queue.pop q in
        Condition.signal not_full;
        v)
  in
  exchange "condition" ~send ~recv

let mutex () =
  let m = Mutex.create () in
  let counter = ref 0 and inside = Atomic.make 0 and overlaps = Atomic.make 0 in
  across_schedulers (fun i ->
      for _ = 1 to per_producer do
        Mutex.protect m (fun () ->
            if Atomic.fetch_and_add inside 1 <> 0 then Atomic.incr overlaps;
            let v = !counter in
            pause i;
            counter := v + 1;
            Atomic.decr inside)
      done);
  Alcotest.(check int) "no overlap" 0 (Atomic.get overlaps);
  Alcotest.(check int) "every increment" (participants * per_producer) !counter

let semaphore () =
  let s = Semaphore.make 2 in
  let inside = Atomic.make 0 and most = Atomic.make 0 in
  across_schedulers (fun i ->
      for _ = 1 to per_producer do
        Semaphore.acquire s;
        let n = 1 + Atomic.fetch_and_add inside 1 in
        if n > Atomic.get most then Atomic.set most n;
        pause i;
        Atomic.decr inside;
        Semaphore.release s
      done);
  Alcotest.(check bool) "at most 2 inside" true (Atomic.get most <= 2);
  Alcotest.(check int) "permits back" 2 (Semaphore.get_value s)

let promise () =
  let p = Promise.create () in
  let seen = Array.make participants 0 in
  across_schedulers (fun i ->
      if i = 4 then (
        for _ = 1 to 1000 do
          Domain.cpu_relax ()
        done;
        Promise.fill p 42);
      seen.(i) <- Promise.await p);
  Alcotest.(check (array int))
    "everyone saw the value"
    (Array.make participants 42)
    seen

let lazy_value () =
  let computed = Atomic.make 0 in
  let l =
    Lazy.from_fun (fun () ->
        Atomic.incr computed;
        for _ = 1 to 10_000 do
          Domain.cpu_relax ()
        done;
        7)
  in
  let seen = Array.make participants 0 in
  across_schedulers (fun i -> seen.(i) <- Lazy.force l);
  Alcotest.(check int) "computed once" 1 (Atomic.get computed);
  Alcotest.(check (array int))
    "everyone got it"
    (Array.make participants 7)
    seen

(* Consumer 1 (a fiber on domain A) is cancelled from the systhread while
   values are in flight: it must lose none of them. *)
let channel_with_cancellation () =
  let c = Channel.create 1 in
  let received = Array.make participants [] in
  let victim = Atomic.make None in
  let producers_done = Atomic.make 0 in
  let on_fiber i h =
    if i = 1 then Atomic.set victim (Some (fun () -> Fiber.cancel h))
  in
  across_schedulers ~on_fiber (fun i ->
      if i mod 2 = 0 then (
        for j = 0 to per_producer - 1 do
          Channel.send c ((i * per_producer) + j)
        done;
        if Atomic.fetch_and_add producers_done 1 = 2 then Channel.close c)
      else (
        if i = 5 then (
          (* Cancel the victim once it has received something. *)
          while received.(1) = [] && not (Channel.is_closed c) do
            Thread.yield ()
          done;
          Option.iter (fun cancel -> cancel ()) (Atomic.get victim));
        try
          while true do
            received.(i) <- Channel.recv c :: received.(i)
          done
        with Channel.Closed -> ()));
  check_each_once "channel with a cancelled consumer" received

let () =
  Test_support.Watchdog.start ~seconds:120. "test_matrix";
  let tc name f = Alcotest.test_case name `Quick f in
  Alcotest.run "cross-scheduler"
    [
      ( "two fifo domains + bare domain + systhread",
        [
          tc "mvar" mvar;
          tc "channel (rendezvous)" (channel 0);
          tc "channel (capacity 4)" (channel 4);
          tc "mutex" mutex;
          tc "condition" condition;
          tc "semaphore" semaphore;
          tc "promise" promise;
          tc "lazy" lazy_value;
          tc "channel with a cancelled consumer" channel_with_cancellation;
        ] );
    ]
