(* A tour of braid_pool: CPU work on a work-stealing pool, awaited from
   fibers of another scheduler without blocking them.
   Run with `dune exec examples/pool_tour/pool_tour.exe`. *)

open Braid_sync
module Fiber = Braid.Fiber
module Pool = Braid_pool

let section title = Printf.printf "\n-- %s\n%!" title
let rec fib n = if n < 2 then n else fib (n - 1) + fib (n - 2)

(* Nested parallelism: each call above the cutoff forks its first half as a
   task and awaits it; idle workers steal the oldest (largest) halves. *)
let rec parallel_fib pool n =
  if n < 20 then fib n
  else
    let first = Pool.async pool (fun () -> parallel_fib pool (n - 1)) in
    let second = parallel_fib pool (n - 2) in
    Promise.await first + second

let timed f =
  let t0 = Unix.gettimeofday () in
  let v = f () in
  (v, (Unix.gettimeofday () -. t0) *. 1000.)

let nested pool =
  section "nested async/await: fib 32";
  let v, seq_ms = timed (fun () -> fib 32) in
  let w, pool_ms =
    timed (fun () -> Pool.run pool (fun () -> parallel_fib pool 32))
  in
  assert (v = w);
  Printf.printf "fib 32 = %d: sequential %.1f ms, pool of %d domains %.1f ms\n"
    v seq_ms (Pool.size pool) pool_ms

(* The thesis's Figure 2.2: request handlers are fibers of a FIFO scheduler.
   Each awaits CPU work on the pool; awaiting blocks only that fiber, so all
   requests are in the pool at once instead of one after another. *)
let requests pool =
  section "fibers of a FIFO scheduler await the pool";
  let log = ref [] in
  Braid_fifo.run (fun () ->
      List.init 6 (fun i ->
          Fiber.fork (fun () ->
              log := Printf.sprintf "request %d submitted" i :: !log;
              let v =
                Promise.await (Pool.async pool (fun () -> fib (24 + i)))
              in
              log := Printf.sprintf "request %d answered: %d" i v :: !log))
      |> List.iter Fiber.join);
  List.iter print_endline (List.rev !log)

let loops pool =
  section "parallel loops";
  let squares = Array.make 10 0 in
  Pool.parallel_for pool ~start:0 ~finish:9 (fun i -> squares.(i) <- i * i);
  Printf.printf "squares: %s\n"
    (String.concat " " (Array.to_list (Array.map string_of_int squares)));
  let sum =
    Pool.parallel_for_reduce pool ~start:1 ~finish:1_000_000 ~combine:( + )
      ~init:0 (fun i -> i mod 7)
  in
  Printf.printf "sum of i mod 7 for i in 1..1_000_000: %d\n" sum

let failures pool =
  section "a task's exception reaches its awaiter";
  let p = Pool.async pool (fun () -> failwith "no such file") in
  match Promise.await p with
  | () -> ()
  | exception Failure msg -> Printf.printf "awaiting raised Failure %S\n" msg

let () =
  Pool.with_pool ~domains:2 @@ fun pool ->
  nested pool;
  requests pool;
  loops pool;
  failures pool
