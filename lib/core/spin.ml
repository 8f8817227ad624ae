(* From 1 pause between the first looks to at most 2^4 = 16 (Backoff draws
   each wait at random below its bound): a handoff is seen within a few
   hundred nanoseconds of its arrival, while a long spin still leaves the
   line it watches mostly alone. *)
let backoff = Backoff.create ~lower_wait_log:0 ~upper_wait_log:4 ()

let until ~looks ready x =
  let rec spin backoff looks =
    ready x || (looks > 0 && spin (Backoff.once backoff) (looks - 1))
  in
  spin backoff looks
