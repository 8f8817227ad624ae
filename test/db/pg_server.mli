(** A throwaway PostgreSQL server (Debian's, the newest installed) for the
    tests: [initdb] into a temporary directory, listening on a Unix-domain
    socket in that directory only (no TCP port to collide with other tests). As
    root, the server runs as the [postgres] user, since PostgreSQL refuses to
    run as root. *)

type t

val start : unit -> t
(** [start ()] creates and starts a server; it is stopped and its directory
    removed at exit, even if a test fails. Blocks the calling thread (about a
    second). Raises [Failure] if the server cannot start. *)

val conninfo : t -> string
(** libpq's connection string for the server's [postgres] database. *)

val stop_immediately : t -> unit
(** [stop_immediately t] is [pg_ctl stop -m immediate]: every server process
    exits at once, dropping its connections. Blocks the calling thread. *)

val restart : t -> unit
(** [restart t] starts the stopped server again. Blocks the calling thread. *)

val stop : t -> unit
(** [stop t] stops the server and removes its directory; idempotent. *)
