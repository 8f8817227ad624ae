(* lib/sync/contract.ml, on the real lib/core sources copied next to this
   file: what the structures take from a scheduler. *)

exception Cancelled = Suspend.Cancelled

let suspend = Suspend.suspend
let self_id = Fiber.self_id
let protect = Fiber.protect
