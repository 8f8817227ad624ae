(** What the server asks of the system beyond OCaml's [Unix]: giving memory back
    after a burst, the descriptor limit, free space. Internal; the descriptor
    limit is exposed by {!Server.raise_descriptor_limit}. *)

val give_back_memory : unit -> unit
(** [give_back_memory ()] compacts the OCaml heap ({!Gc.compact}: every domain
    pauses meanwhile) and returns the pages malloc then holds free to the system
    (glibc's [malloc_trim]; nothing more elsewhere). Tens of milliseconds for a
    heap of a hundred megabytes: for a lull, not for every tick. *)

val descriptor_limits : unit -> int * int
(** [(soft, hard)] [RLIMIT_NOFILE]; [max_int] for no limit. Raises
    [Unix.Unix_error] if the system refuses. *)

val set_descriptor_limit : int -> unit
(** [set_descriptor_limit n] sets the soft [RLIMIT_NOFILE] to [n] (at most the
    hard limit). Raises [Unix.Unix_error] if the system refuses. *)

(** How {!open_if_cached} opens. *)
type cached_open =
  | Path_itself  (** [O_PATH | O_NOFOLLOW]: for [lstat] (a link is itself). *)
  | Path_followed  (** [O_PATH]: for [stat]. *)
  | For_reading  (** [O_RDONLY | O_NONBLOCK]. *)

val open_if_cached : string -> cached_open -> Unix.file_descr
(** [open_if_cached path how] opens [path] with [openat2] and [RESOLVE_CACHED]
    (Linux 5.12): only if every component of [path] is in the kernel's dentry
    cache, so the call never waits for a disk. Never blocks on a lookup; an
    [O_RDONLY] open of a regular file then does no IO either. Raises
    [Unix.Unix_error (EAGAIN, "openat2", path)] if the lookup would need the
    disk; [ENOSYS], [EINVAL] or [E2BIG] where the kernel lacks [openat2] or
    [RESOLVE_CACHED] (or a sandbox refuses it: [EPERM]); the path's own error
    otherwise ([ENOENT], ...). *)

val open_regular_for_reading : string -> Unix.file_descr
(** [open_regular_for_reading path] opens the regular file [path] for reading,
    waiting as long as the open takes (a disk, a lease holder): for a thread
    that may block, never an event loop's. Anything but a regular file is
    refused without being opened for reading (a FIFO would wait for a writer).
    Releases the runtime lock meanwhile. Raises
    [Unix.Unix_error (EACCES, "open", path)] for a file that is not regular, the
    open's own error otherwise. *)

val inherited_fd : int -> Unix.file_descr
(** [inherited_fd n] is the descriptor number [n], open in this process since it
    started (passed by the parent). Raises [Unix.Unix_error (EBADF, _, _)] if
    [n] is not open. *)

val free_bytes : string -> int
(** [free_bytes path] is the space an unprivileged process may still write on
    the file system holding [path], in bytes (statvfs(2):
    [f_bavail * f_frsize]). One system call that may wait for the file system (a
    network mount): at start and reload, not per request. Raises
    [Unix.Unix_error] if the system refuses ([ENOENT], ...). *)
