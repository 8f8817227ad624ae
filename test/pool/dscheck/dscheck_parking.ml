(* Every interleaving of lib/pool/parking.ml's protocol: workers that look
   for work, search, park and pass wake-ups on as Braid_pool's workers do,
   against a producer that publishes work and then notifies. A lost wake-up
   leaves a worker blocked for ever in Condition.wait, which the final
   checks see. Parking has no cancellation; its counterpart of a cancelled
   waiter is a notification skipped because a worker was searching or
   already being woken, which that worker must pass on. *)

let run name scenario =
  let runs = ref 0 in
  Atomic.trace (fun () ->
      incr runs;
      Sim.reset ();
      scenario ());
  Printf.printf "%s: every interleaving checked (%d runs)\n%!" name !runs

(* Work items are a counter: taking one is a decrement. *)
let rec take work =
  let n = Atomic.get work in
  if n = 0 then None
  else if Atomic.compare_and_set work n (n - 1) then Some ()
  else take work

(* Braid_pool's [idle] with one search round, down to taking one item. *)
let rec worker ~search p work =
  let found =
    if search && Parking.try_search p then (
      let found = take work in
      Parking.stop_searching p;
      found)
    else None
  in
  match found with
  | Some () -> if Atomic.get work > 0 then Parking.notify p
  | None -> (
      match Parking.park p (fun () -> take work) with
      | Some () -> Parking.notify p
      | None -> (
          match take work with
          | Some () -> Parking.notify p
          | None -> worker ~search p work))

let publish p work =
  Atomic.incr work;
  Parking.notify p

(* One worker, one item: the worker takes it, whether it sees it before
   parking or is woken for it. *)
let one_item ~search () =
  let p = Parking.create () and work = Atomic.make 0 in
  let w = Sim.spawn (fun () -> worker ~search p work) in
  ignore (Sim.spawn (fun () -> publish p work));
  Atomic.final (fun () ->
      Atomic.check (fun () -> !w = Some () && Atomic.get work = 0))

(* Two workers, two items published at once with one notification (a
   burst, or a second notification skipped because a wake-up was on its way
   or a worker was searching): the worker that finds an item must pass the
   wake-up on; both items are taken and nobody sleeps on work. *)
let two_items ~search () =
  let p = Parking.create () and work = Atomic.make 0 in
  let a = Sim.spawn (fun () -> worker ~search p work) in
  let b = Sim.spawn (fun () -> worker ~search:false p work) in
  ignore
    (Sim.spawn (fun () ->
         ignore (Atomic.fetch_and_add work 2);
         Parking.notify p));
  Atomic.final (fun () ->
      Atomic.check (fun () ->
          !a = Some () && !b = Some () && Atomic.get work = 0))

let () =
  run "parking one item" (one_item ~search:false);
  run "parking one item, searching" (one_item ~search:true);
  run "parking two items" (two_items ~search:false);
  run "parking two items, one searching" (two_items ~search:true)
