(** The server's side of {!Braid_web.Spool_budget}: the budget's limit derived
    from the configuration, and its figures for the metrics endpoint. *)

val default_fraction : int
(** The default budget is the free space of the spool directory divided by this:
    4. *)

val default_cap : int
(** ... and at most this: 1 GiB, what 1,000 connections hold in bodies of the
    default body limit (1 MiB). *)

val limit_for : Config.t -> int
(** [limit_for config] is [config.spool_budget] if set; otherwise a quarter of
    the space free in [config.body_temp_dir] (statvfs(2)), at most 1 GiB, or
    that cap if the free space cannot be read. A quarter leaves the rest of the
    file system (on a tmpfs: of memory) to everything else even when the budget
    is spent; the cap is 1,000 connections each holding a body of the default
    limit (1 MiB), and keeps a large disk from letting uploads in progress take
    tens of gigabytes. A server with larger uploads sets its budget. One
    statvfs(2): at start and reload, not per request. *)

val gauges : Braid_web.Spool_budget.t -> Metrics.gauge list
(** The budget's figures for {!Metrics.render}: [spool_bytes] (reserved now),
    [spool_budget_bytes] (the limit) and [spool_refused_total] (a counter). *)
