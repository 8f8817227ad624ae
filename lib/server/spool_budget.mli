(** The server-wide budget of request bodies spooled to disk.

    A whole-body read ({!Body.to_string}) keeps {!Config.t.body_buffer} bytes in
    memory and writes the rest to an unlinked file in {!Config.t.body_temp_dir}.
    Without a bound, what those files hold is connections x body size: 4,000
    clients each holding a 1 MB upload put gigabytes in [/tmp] (in memory, where
    it is a tmpfs). The budget bounds their sum: each piece is reserved before
    it is written, and a body's reservation is given back when its file is
    closed (the body read, failed, or its reader cancelled). A piece that does
    not fit fails the body: [503] with [Retry-After] while other bodies hold the
    budget, [413] if the body alone would not fit in the whole budget.

    One value for the whole server, shared by its loops: its counts are atomic,
    any domain may reserve, release or read them, and none of these blocks. The
    server owns it ({!Production.type-settings}), sets its limit at start and at
    each reload ({!limit_for}), and shows it in its metrics. *)

type t

val create : ?limit:int -> unit -> t
(** [create ~limit ()] is an empty budget of [limit] bytes (default [max_int]:
    no bound). Raises [Invalid_argument] if [limit < 0]. *)

val set_limit : t -> int -> unit
(** [set_limit t n]: [n] bytes from now on. Bodies already holding more keep
    what they hold; new reservations are refused until there is room under [n].
    Raises [Invalid_argument] if [n < 0]. *)

val limit : t -> int

val used : t -> int
(** Bytes reserved now by bodies being spooled. *)

val refused : t -> int
(** Pieces refused so far ([503] and [413] alike). *)

type refusal =
  | Full  (** Other bodies hold the budget: retry later ([503]). *)
  | Too_large  (** The body alone exceeds the whole budget ([413]). *)

val reserve : t -> held:int -> ?total:int -> int -> (unit, refusal) result
(** [reserve t ~held ~total n] takes [n] more bytes for a body that already
    holds [held] and will hold [total] in all if known (its [Content-Length]).
    [Error Too_large] if [held + n] or [total] is above the limit, whatever the
    others hold; [Error Full] if the others leave no room for [n]. On [Error],
    nothing is taken and the refusal is counted. *)

val release : t -> int -> unit
(** [release t n] gives back [n] bytes reserved by {!reserve}. *)

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

val gauges : t -> Metrics.gauge list
(** The budget's figures for {!Metrics.render}: [spool_bytes] (reserved now),
    [spool_budget_bytes] (the limit) and [spool_refused_total] (a counter). *)
