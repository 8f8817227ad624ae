(* The cost of the probes, per call, with nothing reading the ring (as in
   the http benchmark's traced contender): [probe_cost.exe WHAT N] calls the
   probes of WHAT N times and prints the time per iteration. Its instruction
   counts under callgrind, less those of [none] (the same loop, probes off),
   are the figures of docs/tracing.md; scripts/trace-probe-cost.sh runs
   them. Built with the tests, so that it cannot rot; not a test: timings
   belong in benchmarks. *)

module P = Braid_trace.Probe

let id = "4bf92f3577b34da6a3ce929d0e0e4736"

let () =
  let what = Sys.argv.(1) and n = int_of_string Sys.argv.(2) in
  if what <> "none" then P.enable ();
  let t0 = Unix.gettimeofday () in
  (match what with
  | "none" | "run" ->
      for i = 1 to n do
        P.fiber_running i
      done
  | "suspend" ->
      for i = 1 to n do
        P.waiting_on_descriptor Unix.stdin;
        P.fiber_suspended i
      done
  | "http" ->
      for i = 1 to n do
        P.http_began ~fiber:i ~meth:"GET" ~path:"/1k.txt" ~request_id:id;
        P.http_ended ~fiber:i ~status:200 ~bytes:1024
      done
  | "sleep" ->
      for i = 1 to n do
        P.loop_waiting ~timeout_ms:1000;
        P.loop_woken_by ~events:i
      done
  | _ -> invalid_arg ("probe_cost: none | run | suspend | http | sleep: " ^ what));
  let dt = Unix.gettimeofday () -. t0 in
  Printf.printf "%s: %.1f ns per iteration\n" what (dt *. 1e9 /. float n)
