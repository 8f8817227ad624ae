(** A statement to prepare once per connection and run many times.

    {[
      let world_by_id =
        Statement.make "SELECT id, randomnumber FROM world WHERE id = $1"
    ]}

    Make statements once (at module initialisation, say) and run them with a
    driver's [query_prepared] or [exec_prepared]: the first run on each
    connection prepares the statement there (one more round trip), the later
    ones reuse it. A connection opened after a server restart prepares it again
    by itself. *)

type t

val make : string -> t
(** [make sql] is the statement [sql], whose parameters are written as the
    database expects them ([$1], [$2] for PostgreSQL; [?] or [?1] for SQLite).
    Nothing is sent until it is run. Pure; any domain. *)

val sql : t -> string
(** The statement's SQL text. *)

val name : t -> string
(** [name s] is the name a connection prepares [s] under: ["braid_"] and the MD5
    digest of its SQL in hexadecimal, so that two [make] of the same text share
    one prepared statement and no counter is needed. *)
