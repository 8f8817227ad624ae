(** In-memory implementations of the services, for tests: a clock that moves
    only when told, a file system of strings (with directories and symbolic
    links), a log that keeps every event, and a handler store that records each
    lookup.

    Together with {!Services.run} they let a test drive the whole pipeline
    without sockets, disks or real time. Not thread-safe: one test, one domain.
*)

type t

val create : ?now:float -> ?router:Router.t -> unit -> t
(** [create ()] has time [now] (default [1_000_000_000.], a Sunday of 2001), an
    empty file system holding only ["/"], and [router] (default empty) as
    handler store. *)

val capabilities : t -> Capabilities.t

(** {1 Clock} *)

val set_now : t -> float -> unit

(** {1 File system}

    Paths are absolute. Adding creates the missing parent directories and
    replaces what was there. *)

val add_file : t -> ?mtime:float -> string -> string -> unit
(** [add_file t path content] (mtime defaults to the clock). *)

val add_directory : t -> ?mtime:float -> string -> unit

val add_symlink : t -> string -> target:string -> unit
(** [add_symlink t path ~target]; a relative [target] is relative to the link's
    directory, as on Unix. *)

val remove : t -> string -> unit

(** {1 Log and handler store} *)

val events : t -> Log.event list
(** Everything logged, oldest first. *)

val lookups : t -> (Braid_http.Method.t * string) list
(** Every handler lookup, oldest first. *)
