(** The server-wide budget of request bodies spooled to disk.

    A whole-body read ({!Body.to_string}) keeps
    [Braid_server.Config.t.body_buffer] bytes in memory and writes the rest to
    an unlinked file in [Braid_server.Config.t.body_temp_dir]. Without a bound,
    what those files hold is connections x body size: 4,000 clients each holding
    a 1 MB upload put gigabytes in [/tmp] (in memory, where it is a tmpfs). The
    budget bounds their sum: each piece is reserved before it is written, and a
    body's reservation is given back when its file is closed (the body read,
    failed, or its reader cancelled). A piece that does not fit fails the body:
    [503] with [Retry-After] while other bodies hold the budget, [413] if the
    body alone would not fit in the whole budget.

    One value for the whole server, shared by its loops: its counts are atomic,
    any domain may reserve, release or read them, and none of these blocks. The
    server owns it ([Braid_server.Real_services.settings]), sets its limit at
    start and at each reload ([Braid_server.Spool_limit.limit_for]), and shows
    it in its metrics. *)

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
