(* The thesis's §6.3. Producers and consumers exchange [items] values through
   a rendezvous channel on one FIFO scheduler. In each run a fraction of the
   producers are victims: each is cancelled by a consumer at a point in the
   exchange (most are then blocked in [send]). The work is constant: a
   producer claims a ticket before each send and a cancelled send gives its
   ticket back; the main fiber sends the tickets left over at the end. The
   time of each run is normalised to the median run without cancellation.

   Fewer active producers changes the exchange by itself, so each fraction is
   also run with the same victims stopping of their own accord at the same
   points: the ratio of the two isolates what cancelling costs. *)

open Bench_harness
open Braid_sync
module Fiber = Braid.Fiber

let producers = 20
let consumers = 4
let fractions = [ 0.; 0.10; 0.25; 0.50 ]

type ending = Cancelled | Stopped

let run_once ~ending ~items ~fraction =
  Braid_fifo.run @@ fun () ->
  let ch = Channel.create 0 in
  let tickets = ref items and returned = ref 0 and received = ref 0 in
  let victims =
    int_of_float (Float.round (fraction *. float_of_int producers))
  in
  let stop = Array.make producers false in
  let producer i () =
    try
      while !tickets > 0 && not stop.(i) do
        decr tickets;
        try Channel.send ch ()
        with Braid.Cancelled as e ->
          incr returned;
          raise e
      done
    with Braid.Cancelled -> ()
  in
  let handles = Array.init producers (fun i -> Fiber.fork (producer i)) in
  (* Victim [v] is cancelled when the exchange has moved
     [(v + 1) / (victims + 1)] of the items: spread over the run. *)
  let next_victim = ref 0 in
  let threshold v = (v + 1) * items / (victims + 1) in
  let consumer () =
    try
      while true do
        Channel.recv ch;
        incr received;
        while !next_victim < victims && !received >= threshold !next_victim do
          (match ending with
          | Cancelled -> Fiber.cancel handles.(!next_victim)
          | Stopped -> stop.(!next_victim) <- true);
          incr next_victim
        done
      done
    with Channel.Closed -> ()
  in
  let cs = List.init consumers (fun _ -> Fiber.fork consumer) in
  Array.iter (fun h -> try Fiber.join h with Braid.Cancelled -> ()) handles;
  for _ = 1 to !returned do
    Channel.send ch ()
  done;
  Channel.close ch;
  List.iter Fiber.join cs;
  if !received <> items then
    failwith "cancellation-cost: items lost or duplicated";
  !next_victim

let run ~quick =
  let items = 50_000 in
  let rounds = if quick then 11 else 101 in
  let configs =
    (Cancelled, 0.)
    :: List.concat_map
         (fun f -> [ (Cancelled, f); (Stopped, f) ])
         (List.tl fractions)
  in
  (* Interleave the configurations round by round so drift hits them alike. *)
  let samples = Hashtbl.create 8 in
  for round = 1 to rounds do
    if round mod 20 = 1 then progress "  round %d/%d" round rounds;
    List.iter
      (fun ((ending, fraction) as config) ->
        let t = time_s (fun () -> ignore (run_once ~ending ~items ~fraction)) in
        Hashtbl.replace samples config
          (t :: Option.value (Hashtbl.find_opt samples config) ~default:[]))
      configs
  done;
  let median_of config = median (Hashtbl.find samples config) in
  let base = median_of (Cancelled, 0.) in
  row "no producer cancelled" "time per run (median)" (base *. 1e3) "ms"
  :: List.concat_map
       (fun f ->
         let label =
           Printf.sprintf "%.0f%% of %d producers cancelled" (f *. 100.)
             producers
         in
         let cancelled = median_of (Cancelled, f)
         and stopped = median_of (Stopped, f) in
         [
           row label "time per run (median)" (cancelled *. 1e3) "ms";
           row label "time / no-cancellation time" (cancelled /. base) "x";
           row label "time / same producers stopping by themselves"
             (cancelled /. stopped) "x";
         ])
       (List.tl fractions)

let experiment =
  {
    name = "cancellation-cost";
    summary =
      "50,000 items through channels while 0-50% of producers are cancelled \
       (thesis 6.3)";
    run;
  }
