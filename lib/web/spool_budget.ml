type t = { limit : int Atomic.t; used : int Atomic.t; refused : int Atomic.t }

let check n = if n < 0 then invalid_arg "Spool_budget: negative limit"

let create ?(limit = max_int) () =
  check limit;
  { limit = Atomic.make limit; used = Atomic.make 0; refused = Atomic.make 0 }

let set_limit t n =
  check n;
  Atomic.set t.limit n

let limit t = Atomic.get t.limit
let used t = Atomic.get t.used
let refused t = Atomic.get t.refused

type refusal = Full | Too_large

(* A compare-and-set loop: a reservation that would pass the limit takes
   nothing, so bodies racing for the last bytes cannot push [used] over it.
   Written to avoid overflow with [limit = max_int]. *)
let rec reserve t ~held ?(total = 0) n =
  let used = Atomic.get t.used and limit = Atomic.get t.limit in
  if held > limit - n || total > limit then (
    Atomic.incr t.refused;
    Error Too_large)
  else if n > limit - used then (
    Atomic.incr t.refused;
    Error Full)
  else if Atomic.compare_and_set t.used used (used + n) then Ok ()
  else reserve t ~held ~total n

let release t n = if n > 0 then ignore (Atomic.fetch_and_add t.used (-n) : int)
