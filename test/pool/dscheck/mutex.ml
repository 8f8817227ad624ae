(* Stdlib.Mutex for the model: held, and the blocked threads in arrival
   order. [unlock] hands the mutex over to the first of them. *)

type t = (bool * (unit -> unit) list) Atomic.t

let create () = Atomic.make (false, [])

let rec lock t =
  match Atomic.get t with
  | (false, waiters) as seen ->
      if not (Atomic.compare_and_set t seen (true, waiters)) then lock t
  | (true, waiters) as seen ->
      if
        not
          (Sim.block (fun wake ->
               Atomic.compare_and_set t seen (true, waiters @ [ wake ])))
      then lock t

let rec unlock t =
  match Atomic.get t with
  | false, _ -> invalid_arg "Mutex.unlock: not locked"
  | (true, []) as seen ->
      if not (Atomic.compare_and_set t seen (false, [])) then unlock t
  | (true, wake :: rest) as seen ->
      if Atomic.compare_and_set t seen (true, rest) then wake () else unlock t
