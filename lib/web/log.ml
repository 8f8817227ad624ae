include Log_event

let emit e = Services.log e

(* One effect for the clock and the log both. *)
let message level text =
  let services = Services.current () in
  services.log (Message { time = services.now (); level; text })

let error text = message Error text
let warning text = message Warning text
let info text = message Info text
let debug text = message Debug text
