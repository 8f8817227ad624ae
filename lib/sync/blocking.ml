type 'a resumer = ('a, exn) result -> bool

exception Cancelled = Contract.Cancelled

let suspend = Contract.suspend
let self_id = Contract.self_id
let protect = Contract.protect
let not_registered _ = false

let suspend_withdrawing ~register ~withdraw =
  let registered = ref not_registered in
  match
    suspend (fun resume ->
        match register resume with
        | None ->
            registered := resume;
            None
        | done_at_once -> done_at_once)
  with
  | v -> v
  | exception e ->
      let resume = !registered in
      if resume == not_registered then raise e else withdraw resume e
