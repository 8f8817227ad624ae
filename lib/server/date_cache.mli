(** The [Date] header line, formatted at most once per second.

    Not thread-safe: keep one per event loop (the server makes one per domain)
    or per connection. Never blocks. *)

type t

val create : unit -> t

val header_line : t -> float -> string
(** [header_line cache now] is ["Date: <IMF-fixdate of now>\r\n"]: the cached
    string while [now] stays in the same second as the last call, a fresh one
    otherwise. [now] is in seconds since the epoch (the clock capability's
    answer). *)
