type 'a resumer = ('a, exn) result -> bool

exception Cancelled = Braid.Cancelled

let suspend = Braid.suspend
let self_id = Braid.Fiber.self_id
let protect = Braid.Fiber.protect

let suspend_withdrawing ~register ~withdraw =
  let registered = ref None in
  match
    suspend (fun resume ->
        match register resume with
        | None ->
            registered := Some resume;
            None
        | done_at_once -> done_at_once)
  with
  | v -> v
  | exception e -> (
      match !registered with
      | Some resume -> withdraw resume e
      | None -> raise e)
