(** File access that must not stall an event loop, beyond OCaml's [Unix]:
    opening a path only if the kernel can do so without waiting for a disk,
    opening a regular file (and nothing else) for reading on a thread that may
    wait, and the free space of a file system. The static file server's
    production services ([Braid_server.Real_services]) are built on these. Any
    domain or thread may call them; errors are {!Braid_io.Io_error}, as the rest
    of braid.io's file functions. *)

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
    [Io_error {op = "openat2"; error = EAGAIN; detail = path}] if the lookup
    would need the disk; [ENOSYS], [EINVAL] or [E2BIG] where the kernel lacks
    [openat2] or [RESOLVE_CACHED] (or a sandbox refuses it: [EPERM]); the path's
    own error otherwise ([ENOENT], ...). *)

val open_regular_for_reading : string -> Unix.file_descr
(** [open_regular_for_reading path] opens the regular file [path] for reading,
    waiting as long as the open takes (a disk, a lease holder): for a thread
    that may block, never an event loop's. Anything but a regular file is
    refused without being opened for reading (a FIFO would wait for a writer).
    Releases the runtime lock meanwhile. Raises
    [Io_error {op = "open"; error = EACCES; detail = path}] for a file that is
    not regular, the open's own error otherwise. *)

val free_bytes : string -> int
(** [free_bytes path] is the space an unprivileged process may still write on
    the file system holding [path], in bytes (statvfs(2):
    [f_bavail * f_frsize]). One system call that may wait for the file system (a
    network mount): at start and reload, not per request. Raises
    [Io_error {op = "statvfs"; _}] if the system refuses ([ENOENT], ...). *)
