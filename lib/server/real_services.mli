(** The real implementations of the services: the logs (through a {!Log_writer},
    or stderr), the system clock with the event loop's sleeps and timeouts, the
    real file system (with an optional cache of small files), and a
    {!Braid_web.Router} as handler store.

    Make one [t] per event loop (the server makes one per domain), on that
    loop's domain. Its services work from any domain (a pool task submitted by a
    connection inherits them), with two exceptions: [sleep] and [timeout] need a
    fiber of a {!Braid_io} loop ([Invalid_argument] elsewhere), and the file
    cache is used only on the domain that made [t] (it has no lock; other
    domains read the file).

    {b The disk never stalls the loop.} [stat], [realpath], [open_file] and a
    [File.Reader]'s reads wait for the file system on a thread of the calling
    fiber's {!Braid_io.Blocking} pool and suspend only the calling fiber: a slow
    or stalled disk delays the requests that wait on it, never the other
    connections of the loop. A path the kernel has entirely in its caches is
    looked at (and opened) at once on the loop's thread instead, with [openat2]
    and [RESOLVE_CACHED], which refuses with [EAGAIN] what would wait for a
    disk: a hot file costs no hand-off to the pool (see
    [settings.cached_lookups]). sendfile(2), used by the connection for large
    files, still reads from the page cache on the loop's thread, and a page not
    in memory makes it wait for the disk.

    On the loop's thread, [stat] looks at a path once per poll of the loop
    ({!Braid_io.polls}): the requests one poll woke share its answer, as they do
    in h2o's file cache, so a crowd of keep-alive clients asking for one file
    costs one look per poll rather than one per request. A change on disk is
    seen by every request that arrives after it. *)

open Braid_web

type file_cache = {
  max_file_size : int;  (** Files up to this size (bytes) are cached. *)
  max_entries : int;
      (** At most this many files; when full, the cache is emptied. *)
}
(** The cache holds the content of small regular files, keyed by path and
    validated on every use against the {!Braid_web.File.info} the static file
    server just obtained by [stat] ({!Braid_web.File.same_version}: device,
    inode, size, mtime and ctime). A file changed on disk is therefore never
    served stale, except for a write that keeps size, mtime and ctime unchanged,
    which requires changing the clock. It saves the [open], [read] and [close]
    of each request; the [stat] remains (once per poll of the loop). nginx's
    [open_file_cache] (off by default) caches descriptors, not content. *)

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
  cached_lookups : bool;
      (** On the loop's thread, look at and open a path at once when the kernel
          has all of it in its caches ([openat2] with [RESOLVE_CACHED], Linux
          5.12), and send only the others to the thread pool. [false] sends
          every file-system call to the pool: for a file system where even a
          cached path can wait (NFS revalidates attributes over the network).
          Ignored where the kernel lacks [openat2]: everything goes to the pool.
      *)
  metrics : Metrics.t option;
      (** Counts every response logged (method, status class, duration, bytes);
          [None]: no counting. *)
  spool : Spool_budget.t;
      (** The budget of spooled request bodies, shared by every loop of the
          server: {!Server} sets its limit at start and reload
          ({!Spool_limit.limit_for}). *)
}

val default_file_cache : file_cache
(** Files up to 48 KiB, 1024 entries. Larger files are sent from their
    descriptor with sendfile(2) on a socket connection: beyond about 48 KiB that
    costs less CPU than copying them from memory. *)

val settings :
  ?log_level:Log.level ->
  ?access_log:(string -> unit) ->
  ?logger:Log_writer.t ->
  ?file_cache:file_cache option ->
  ?cached_lookups:bool ->
  ?metrics:Metrics.t ->
  ?spool:Spool_budget.t ->
  Router.t ->
  settings
(** Defaults: [Warning], no access log, no logger, {!default_file_cache}, cached
    lookups on the loop, a new spool budget (unbounded until {!Server} sets it).
*)

type t

val create : settings -> t
(** [create settings] on the domain whose loop will use it. *)

val services : t -> Services.t
(** The services, for {!Braid_web.Services.run}. Messages are written with their
    event's time; access entries go to the logger's access log and to
    [access_log]. [now] is [Unix.gettimeofday] (a vDSO call), [monotonic_ns] the
    clock {!Braid_io.Time} uses, [sleep] and [timeout] those of
    {!Braid_io.Time}. [open_file] opens without blocking on special files
    ([O_NONBLOCK]) and refuses anything but a regular file; small files come
    from the cache when it holds the version the [File.info] describes, others
    as a [File.Reader] that carries the descriptor, for sendfile. *)
