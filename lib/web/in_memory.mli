(** In-memory implementations of the services, for tests: a clock that moves
    only when told (with sleeps and timeouts that expire when it does), a file
    system of strings (with directories and symbolic links), a log that keeps
    every event, and a handler store that records each lookup.

    Installed with {!run}, they let a test drive the whole pipeline without
    sockets, disks or real time, timeouts included: a fiber blocked in [sleep]
    or under [timeout] waits until the test calls {!advance}. Every function is
    thread-safe (a pool task may log into it from another domain); sleeping
    needs a Braid fiber or a thread that may park. *)

type t

val create :
  ?now:float -> ?router:Router.t -> ?spool:Spool_budget.t -> unit -> t
(** [create ()] has time [now] (default [1_000_000_000.], a Sunday of 2001), an
    empty file system holding only ["/"], [router] (default empty) as handler
    store, and [spool] (default unbounded) as the budget of spooled bodies
    (which go to the real [Config.t.body_temp_dir]). *)

val services : t -> Services.t

val run : t -> (unit -> 'a) -> 'a
(** [run t f] is {!Services.run} [(services t) f]. *)

(** {1 Clock}

    Wall-clock time ([now]) and monotonic time ([monotonic_ns], from 0) move
    together with {!advance}; {!set_now} steps the wall clock alone, as an
    administrator setting the date would. *)

val advance : t -> float -> unit
(** [advance t seconds] moves both clocks forward, then wakes every sleep and
    expires every timeout that is due, earliest deadline first (in the calling
    thread; the woken fibers run when their scheduler runs them). *)

val set_now : t -> float -> unit

val pending_timers : t -> int
(** Sleeps and timeouts waiting for the clock. *)

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
