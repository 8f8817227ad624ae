exception Io_failed of exn * Printexc.raw_backtrace
exception Abort
exception Timed_out
exception Park

let is_connections_own = function
  | Braid.Cancelled | Io_failed _ | Abort | Timed_out | Park -> true
  | _ -> false
