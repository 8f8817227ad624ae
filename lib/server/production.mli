(** The production implementations of the services: the logs (through a
    {!Log_writer}, or stderr), the system clock, the real file system (with an
    optional cache of small files), and a {!Router} as handler store.

    Make one [t] per event loop (the server makes one per domain): its file
    cache is not shared, so it needs no lock. Every function blocks only as its
    system call does: [stat], [realpath] and file reads block the domain for the
    duration of a disk access (regular files cannot wait in epoll), like nginx
    without thread pools. *)

type file_cache = {
  max_file_size : int;  (** Files up to this size (bytes) are cached. *)
  max_entries : int;
      (** At most this many files; when full, the cache is emptied. *)
}
(** The cache holds the content of small regular files, keyed by path and
    validated on every use against the {!File.info} the static file server just
    obtained by [stat] ({!File.same_version}: device, inode, size, mtime and
    ctime). A file changed on disk is therefore never served stale, except for a
    write that keeps size, mtime and ctime unchanged, which requires changing
    the clock. It saves the [open], [read] and [close] of each request; the
    [stat] remains. nginx's [open_file_cache] (off by default) caches
    descriptors, not content. *)

type settings = {
  router : Router.t;
  log_level : Log.level;  (** Messages above this level are dropped. *)
  access_log : (string -> unit) option;
      (** Receives each access entry in Combined Log Format (no newline); [None]
          drops them. Called in the connection's fiber. *)
  logger : Log_writer.t option;
      (** Where messages and access entries go through a writer fiber, so a
          connection never waits on the disk: messages to its error log, access
          entries (in Combined Log Format) to its access log if it has one.
          Without it, messages go to stderr, written by the connection's fiber.
      *)
  file_cache : file_cache option;
}

val default_file_cache : file_cache
(** 64 KiB files, 1024 entries. *)

val settings :
  ?log_level:Log.level ->
  ?access_log:(string -> unit) ->
  ?logger:Log_writer.t ->
  ?file_cache:file_cache option ->
  Router.t ->
  settings
(** Defaults: [Warning], no access log, no logger, {!default_file_cache}. *)

type t

val create : settings -> t

val capabilities : t -> Capabilities.t
(** For {!Services.run}. *)

module Direct : Capabilities.S with type env = t
(** The same functions, called directly: the pipeline without effects. *)

(** {1 The implementations} *)

val log : t -> Log.event -> unit
(** Sends messages at or below the level to the logger's error log, or to stderr
    without a logger, one line each (the backtrace of a failed handler on the
    following lines), and access entries to the logger's access log and to
    [access_log]. Never waits for a logger. *)

val now : t -> float
(** [Unix.gettimeofday]: a vDSO call, no system call. *)

val stat : t -> follow:bool -> string -> (File.info, File.error) result
val realpath : t -> string -> (string, File.error) result

val open_file : t -> string -> File.info -> (File.contents, File.error) result
(** Opens without blocking on special files ([O_NONBLOCK]), and refuses anything
    but a regular file. Small files come from the cache when it holds the
    version [info] describes. *)

val find_handler : t -> Braid_http.Method.t -> string -> Router.found
