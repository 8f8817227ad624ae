open Bench_harness
module Pool = Braid_pool
module Promise = Braid_sync.Promise

let load_row () = load_row "at start"

(* fib *)

let rec fibonacci n = if n < 2 then n else fibonacci (n - 1) + fibonacci (n - 2)

let rec pool_fib pool ~cutoff n =
  if n < cutoff then fibonacci n
  else
    let a = Pool.async pool (fun () -> pool_fib pool ~cutoff (n - 1)) in
    let b = pool_fib pool ~cutoff (n - 2) in
    Promise.await a + b

(* What every pool task runs on: a fiber of its own (a fresh stack), under
   an effect handler that handles nothing here. *)
let in_fiber f = Effect.Deep.try_with f () { effc = (fun _ -> None) }

(* The classic hand-parallelisation: one half on a fresh domain. *)
let static_split n =
  let other = Domain.spawn (fun () -> fibonacci (n - 1)) in
  let mine = fibonacci (n - 2) in
  Domain.join other + mine

let cpu_seconds () =
  let t = Unix.times () in
  t.tms_utime +. t.tms_stime

(* Fraction of one core the process uses while [pool] sits idle for
   [seconds] (after its workers' spinning window has passed). *)
let idle_cpu ~seconds pool =
  ignore (Pool.run pool (fun () -> pool_fib pool ~cutoff:20 25));
  Unix.sleepf 0.1;
  let before = cpu_seconds () in
  Unix.sleepf seconds;
  (cpu_seconds () -. before) /. seconds

let run_fib ~quick =
  let n = 32 and cutoff = 20 in
  let rounds = if quick then 9 else 41 in
  let load = load_row () in
  let expected = fibonacci n in
  let check v = if v <> expected then failwith "fib: wrong result" in
  let on pool () = check (Pool.run pool (fun () -> pool_fib pool ~cutoff n)) in
  let timed f = time_s f *. 1000. in
  (* Long-lived pools, as a program would use them (a fresh domain first
     pays page faults on its minor heap). Warm up, then alternate the
     contenders in each round so that a noisy neighbour slows all of them,
     not one. *)
  let pool1 = Pool.create ~domains:1 () and pool2 = Pool.create ~domains:2 () in
  check (fibonacci n);
  on pool1 ();
  on pool2 ();
  let samples =
    List.init rounds (fun _ ->
        let s = timed (fun () -> check (fibonacci n)) in
        let inside = ref nan in
        let one =
          timed (fun () ->
              inside :=
                Pool.run pool1 (fun () -> timed (fun () -> check (fibonacci n))))
        in
        let p1 = timed (on pool1) in
        let p2 = timed (on pool2) in
        let st = timed (fun () -> check (static_split n)) in
        let bare =
          Domain.join
            (Domain.spawn (fun () -> timed (fun () -> check (fibonacci n))))
        in
        let handled =
          timed (fun () -> in_fiber (fun () -> check (fibonacci n)))
        in
        ((s, one, p1, p2, st), (!inside, bare, handled)))
  in
  let extra = List.map snd samples and samples = List.map fst samples in
  Pool.shutdown pool1;
  Pool.shutdown pool2;
  (* On a shared 2-core machine a neighbour's burst often puts both workers
     on one core for a whole round (seen in /proc/self/task/*/schedstat:
     each worker then waits half the round in the run queue). The median
     shows what a user gets on such a machine; the fastest round what the
     pool does when it has the two cores. *)
  let stats f =
    let xs = List.map f samples in
    (median xs, List.fold_left min infinity xs)
  in
  let seq = stats (fun (s, _, _, _, _) -> s)
  and one = stats (fun (_, o, _, _, _) -> o)
  and p1 = stats (fun (_, _, p, _, _) -> p)
  and p2 = stats (fun (_, _, _, p, _) -> p)
  and st = stats (fun (_, _, _, _, s) -> s) in
  let extra_stats f =
    let xs = List.map f extra in
    (median xs, List.fold_left min infinity xs)
  in
  let inside = extra_stats (fun (i, _, _) -> i)
  and bare = extra_stats (fun (_, b, _) -> b)
  and handled = extra_stats (fun (_, _, h) -> h) in
  let idle =
    Pool.with_pool ~domains:2 (idle_cpu ~seconds:(if quick then 0.5 else 1.0))
  in
  let times name (median, fastest) =
    [
      row name (Printf.sprintf "wall time (median of %d)" rounds) median "ms";
      row name (Printf.sprintf "wall time (fastest of %d)" rounds) fastest "ms";
    ]
  in
  let ratios name (a_median, a_fastest) (b_median, b_fastest) =
    [
      ratio (name ^ " (medians)") (a_median /. b_median);
      ratio (name ^ " (fastest)") (a_fastest /. b_fastest);
    ]
  in
  (load :: times "sequential fib 32" seq)
  @ times "sequential fib 32 as one task, pool 1 domain" one
  @ times "the same timed inside the task (no hand-off)" inside
  @ times "sequential fib 32 on a fresh bare domain (timed inside)" bare
  @ times
      "sequential fib 32 in an effect handler (own fiber stack), main domain"
      handled
  @ times "pool, 1 domain" p1 @ times "pool, 2 domains" p2
  @ times "static split on 2 domains" st
  @ ratios "one-task overhead: one task / sequential" one seq
  @ ratios "hand-off: one task / the same timed inside it" one inside
  @ ratios "domain: bare domain / main domain (sequential)" bare seq
  @ ratios "stack: in an effect handler / main stack (sequential)" handled seq
  @ ratios "speed-up: sequential / pool 1 domain" seq p1
  @ ratios "speed-up: sequential / pool 2 domains" seq p2
  @ ratios "scaling: pool 1 / pool 2 domains" p1 p2
  @ ratios "speed-up: one task / pool 2 domains" one p2
  @ ratios "speed-up: sequential / static split" seq st
  @ [ row "idle pool, 2 domains" "CPU while idle" (100. *. idle) "% of a core" ]

let fib =
  {
    name = "fib";
    summary =
      "fib 32 (cutoff 20) on pools of 1 and 2 domains vs sequential: wall \
       time, speed-up, idle CPU";
    run = run_fib;
  }

(* pool-overhead *)

let from_outside pool n =
  time_s (fun () ->
      for i = 1 to n do
        ignore
          (Sys.opaque_identity (Promise.await (Pool.async pool (fun () -> i))))
      done)

let batch_from_outside pool n =
  let batch = 1000 in
  time_s (fun () ->
      for _ = 1 to n / batch do
        let ps = Array.init batch (fun i -> Pool.async pool (fun () -> i)) in
        Array.iter (fun p -> ignore (Sys.opaque_identity (Promise.await p))) ps
      done)

let from_fifo_fiber pool n =
  time_s (fun () ->
      Braid_fifo.run (fun () ->
          for i = 1 to n do
            ignore
              (Sys.opaque_identity
                 (Promise.await (Pool.async pool (fun () -> i))))
          done))

let inside_task pool n =
  Pool.run pool (fun () ->
      time_s (fun () ->
          for i = 1 to n do
            ignore
              (Sys.opaque_identity
                 (Promise.await (Pool.async pool (fun () -> i))))
          done))

let fifo_fork_join n =
  time_s (fun () ->
      Braid_fifo.run (fun () ->
          for i = 1 to n do
            ignore
              (Sys.opaque_identity
                 (Braid.Fiber.join (Braid.Fiber.fork (fun () -> i))))
          done))

let domain_spawn_join n =
  time_s (fun () ->
      for i = 1 to n do
        ignore (Sys.opaque_identity (Domain.join (Domain.spawn (fun () -> i))))
      done)

let run_overhead ~quick =
  let scale = if quick then 1 else 10 in
  let load = load_row () in
  let reps = if quick then 3 else 5 in
  let measure f n =
    repeat_median reps (fun () -> f n) *. 1e9 /. float_of_int n
  in
  let outside = 10_000 * scale and inside = 100_000 * scale in
  (* One pool at a time: OCaml 5 stops every domain, parked ones included,
     at each minor collection, so an idle pool slows down the others. *)
  let on_pool domains measurements =
    Pool.with_pool ~domains (fun pool ->
        List.map
          (fun (name, f, n) ->
            ( Printf.sprintf "%s, %d domain%s" name domains
                (if domains = 1 then "" else "s"),
              measure (f pool) n ))
          measurements)
  in
  let measurements =
    [
      ("from a bare thread", from_outside, outside);
      ("from a FIFO fiber", from_fifo_fiber, outside);
      ("batches of 1000 from a bare thread", batch_from_outside, 10 * outside);
      ("inside a task", inside_task, inside);
    ]
  in
  let rows =
    on_pool 1 measurements @ on_pool 2 measurements
    @ [
        ("peer: Braid_fifo fork + join", measure fifo_fork_join inside);
        ("peer: Domain.spawn + join", measure domain_spawn_join (100 * scale));
      ]
  in
  let get name = List.assoc name rows in
  (load :: List.map (fun (name, ns) -> row name "async + await" ns "ns") rows)
  @ [
      ratio "Domain.spawn+join / pool from a bare thread (2 domains)"
        (get "peer: Domain.spawn + join" /. get "from a bare thread, 2 domains");
      ratio "pool inside a task (1 domain) / fifo fork+join (cost ratio)"
        (get "inside a task, 1 domain" /. get "peer: Braid_fifo fork + join");
    ]

let pool_overhead =
  {
    name = "pool-overhead";
    summary =
      "ns per async + await of a trivial task, outside and inside the pool";
    run = run_overhead;
  }
