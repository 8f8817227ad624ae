(* The server's side of the spool budget (Braid_web.Spool_budget): its limit
   from the configuration and its figures in the metrics. *)

open Braid_web

let default_fraction = 4
let default_cap = 1024 * 1024 * 1024

let limit_for (config : Config.t) =
  match config.spool_budget with
  | Some n -> n
  | None -> (
      match Braid_io.File_access.free_bytes config.body_temp_dir with
      | free -> min default_cap (free / default_fraction)
      | exception Braid_io.Io_error _ ->
          (* The directory is checked before (Server); a file system that
             cannot say its free space gets the cap, not an error. *)
          default_cap)

let gauges t =
  [
    Metrics.gauge "spool_bytes"
      "Bytes of request bodies spooled to disk now (reserved from the budget)."
      (float (Spool_budget.used t));
    Metrics.gauge "spool_budget_bytes"
      "The spool budget: most bytes of request bodies on disk at once."
      (float (Spool_budget.limit t));
    Metrics.counter "spool_refused_total"
      "Request bodies refused for the spool budget (503, or 413 for a body \
       larger than the budget)."
      (Spool_budget.refused t);
  ]
