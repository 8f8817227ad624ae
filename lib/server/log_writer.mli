(** The access and error logs, written by one fiber.

    Producers (connection fibers on any domain) hand lines to a bounded
    {!Braid_sync.Channel} with [try_send]: they never wait for the writer, let
    alone the disk. When the channel is full the line is dropped and counted;
    the writer reports the count on the error log. One writer serves a whole
    server, whatever its number of domains.

    The writer fiber ({!run}) takes a batch (one [recv], then [try_recv] up to a
    cap) and appends it to each file with one [write] ([O_APPEND], whole lines).
    That write blocks the writer's loop for the length of the system call (a
    copy into the page cache), not the producers. Every [check_interval]
    seconds, and after a failed write, it compares the file its descriptor names
    with what the path names now (device and inode): a log deleted or renamed
    away (rotated with [mv]) is reopened at its path, and a file that cannot be
    opened or written is retried at the next check, its lines counted as dropped
    meanwhile. An exception escaping the writer's work (a bug, or the [write] a
    test injects) restarts it: the lines of the batch in progress are counted as
    dropped and the restart is logged.

    Inspired by the logger of Marlow's Haskell web server (§5 of "Parallel and
    Concurrent Programming in Haskell"). *)

type t

val create :
  ?capacity:int ->
  ?batch:int ->
  ?check_interval:float ->
  ?write:(Unix.file_descr -> bytes -> int -> int -> int) ->
  ?now:(unit -> float) ->
  ?access:string ->
  ?error:string ->
  unit ->
  t
(** [create ()] is a writer with no access log and the error log on standard
    error. [access] and [error] are file paths (created if missing, appended
    to). [capacity] (default 4096) bounds the lines waiting for the writer;
    [batch] (default 1024) bounds the lines written in one [write];
    [check_interval] defaults to 1 s. [write] (default [Unix.single_write]) is
    how bytes reach a descriptor: tests pass one that fails or raises. [now]
    (default [Unix.gettimeofday]) stamps the writer's own notes (dropped lines,
    reopened files); the lines it is given carry their own time. Its rotation
    checks follow {!Braid_io.Time}: it runs in an event loop.

    Raises [Invalid_argument] if [capacity] or [batch] is not positive. *)

val set_paths : t -> access:string option -> error:string option -> unit
(** [set_paths t ~access ~error] makes the writer switch files before its next
    batch ([access = None]: no access log; [error = None]: standard error).
    Lines already queued go to the new files. Callable from anywhere. *)

val logs_access : t -> bool
(** Whether an access log is configured now: lets producers skip formatting an
    entry nobody keeps. *)

val access : t -> string -> unit
(** [access t line] queues an access-log line (without newline), with the
    caller's request id ({!Braid_web.Log.Request_id.current}), if it has one,
    appended as a last quoted field (["..." "curl/8.0" "4bf9...4736"]). Never
    blocks; drops (and counts) the line if the queue is full or there is no
    access log. Callable from any fiber, domain or thread. *)

val error : t -> time:float -> string -> unit
(** [error t ~time text] queues [text] for the error log, prefixed with [time]
    (seconds since the epoch) in UTC ([[2024-05-01T12:00:00Z] ]) and the
    caller's request id, if it has one ([[4bf9...4736] ]). Never blocks, like
    {!access}. *)

val run : t -> unit
(** [run t] is the writer: it writes batches until cancelled, restarting its
    work after any exception but {!Braid.Cancelled}. When cancelled, it writes
    every line still queued (shielded from the cancellation), closes its files
    and raises [Cancelled]. Must run in a fiber of {!Braid_io.run}; one at a
    time per writer.

    Raises [Invalid_argument] if another [run t] is in progress.
    @raise Braid.Cancelled once cancelled and drained. *)

val dropped : t -> int
(** Lines dropped so far: queue full, no file to write to, or lost to a failed
    write or a restart. *)

val restarts : t -> int
(** How many times {!run} restarted its work after an exception. *)
