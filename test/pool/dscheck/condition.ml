(* Stdlib.Condition for the model: the waiting threads in arrival order.
   A waiter is queued before it unlocks the mutex, so no signal sent after
   it released the mutex is lost. (Stdlib's may also wake spuriously, which
   Parking.park's callers take like any wake-up.) *)

type t = (unit -> unit) list Atomic.t

let create () = Atomic.make []

let rec add t wake =
  let seen = Atomic.get t in
  if not (Atomic.compare_and_set t seen (seen @ [ wake ])) then add t wake

let wait t m =
  ignore
    (Sim.block (fun wake ->
         add t wake;
         Mutex.unlock m;
         true));
  Mutex.lock m

let rec signal t =
  match Atomic.get t with
  | [] -> ()
  | wake :: rest as seen ->
      if Atomic.compare_and_set t seen rest then wake () else signal t

let broadcast t = List.iter (fun wake -> wake ()) (Atomic.exchange t [])
