(* One pause between looks, not Backoff's growing random waits: see the
   interface. *)
let until ~pauses ready x =
  let rec spin pauses =
    ready x
    || pauses > 0
       &&
       (Domain.cpu_relax ();
        spin (pauses - 1))
  in
  spin pauses
