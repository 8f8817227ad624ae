(** Open files in direct style: reads and writes at offsets or at the file's
    position, metadata, and ownership by a switch.

    {[
      let log_and_read path =
        Switch.run @@ fun sw ->
        let log =
          File.open_out ~sw ~append:true ~create:(`If_missing 0o644) path
        in
        File.write_string log "started\n";
        let data = File.open_in ~sw "data.bin" in
        let header = Bytes.create 16 in
        File.pread_exact data header 0 16 ~file_offset:0
    ]}

    {b Blocking.} A disk does not tell epoll when it is ready, so every call
    that touches the file system (open, read, write, stat, fsync, close) runs on
    a thread of the calling fiber's {!Blocking} pool and blocks only the calling
    fiber: the loop runs its other fibers meanwhile. Any fiber of any Braid
    scheduler may call these functions, as may a bare thread (which they block);
    a file is not tied to the loop that opened it.

    {b Cost.} One round trip to the pool per call, plus copies: data goes
    through a buffer owned by the call (so a cancelled call never touches the
    caller's bytes), and reads and writes move at most 1 MiB per system call.
    Read a large file in chunks of 64 KiB or more, not 4 KiB.

    {b Cancellation.} A fiber cancelled during a call is woken at once with
    {!Braid.Cancelled}. A call that had not started yet never runs; one already
    running cannot be interrupted and finishes on its pool thread: a read's data
    is dropped, a write may still complete, and a file opened too late is
    closed.

    {b Ownership.} A file belongs to the switch given to its open, which closes
    it when it finishes; {!close} closes it earlier. Closing never pulls the
    descriptor from under a call still running on a pool thread: the descriptor
    is released when the last such call ends.

    {b Errors.} Failures raise {!Braid_io.Io_error} [{op; error; detail}], the
    parts of a [Unix.Unix_error] with names: [op] names the system call
    (["open"], ["pread"], ["write"], ["fstat"], ...) and [detail] is the path
    the file was opened with. Using a closed file raises
    [{op; error = EBADF; detail = path}]. (Sockets raise the same exception with
    [detail = ""]: they have no path to name.) *)

type t
(** An open file. *)

(** {1 Opening} *)

type create =
  [ `Never  (** The file must exist: [ENOENT] otherwise. *)
  | `If_missing of int
    (** Create the file with these permissions if it does not exist; keep the
        contents of an existing one. *)
  | `Or_truncate of int
    (** Create the file with these permissions if it does not exist; empty an
        existing one. *)
  | `Exclusive of int
    (** Create the file with these permissions; [EEXIST] if it exists. *) ]
(** What to do about a file that does or does not exist yet. Permissions are
    filtered by the process's umask, as with [open(2)]. *)

val open_in : sw:Braid.Switch.t -> string -> t
(** [open_in ~sw path] opens the existing file [path] for reading, owned by
    [sw]. Blocks only the calling fiber.

    Raises {!Braid_io.Io_error} [{op = "open"; error; detail = path}]. Raises
    [Invalid_argument] if [sw] has finished (the file is then closed). *)

val open_out : sw:Braid.Switch.t -> ?append:bool -> create:create -> string -> t
(** [open_out ~sw ~append ~create path] opens [path] for writing, owned by [sw].
    With [~append:true] (default [false]) every {!write_all} goes to the file's
    end, even if another process writes it too ([O_APPEND]; on Linux
    {!pwrite_all} then appends as well). Errors as {!open_in}. *)

val open_rw : sw:Braid.Switch.t -> create:create -> string -> t
(** [open_rw ~sw ~create path] opens [path] for reading and writing, owned by
    [sw]. Errors as {!open_in}. *)

val open_with_flags :
  sw:Braid.Switch.t -> ?perm:int -> Unix.open_flag list -> string -> t
(** [open_with_flags ~sw ~perm flags path] is [Unix.openfile path flags perm]
    (with [O_CLOEXEC] added), owned by [sw]: for the flags the other opens do
    not offer ([O_SYNC], [O_NOFOLLOW], ...). [perm] defaults to [0o666]. Errors
    as {!open_in}. *)

val path : t -> string
(** The path the file was opened with. *)

val is_open : t -> bool
(** [false] once {!close} was called or the owning switch finished. *)

val close : t -> unit
(** [close t] closes [t] now (when the calls still running on it end, if any).
    Idempotent; the switch will not close it again. Shielded from cancellation:
    once started, the close is never dropped.

    Raises {!Braid_io.Io_error} [{op = "close"; error; detail = path}] if
    [close(2)] fails (the descriptor is released anyway). A close deferred until
    a running call ends reports no error: nobody waits for it, and [close(2)]
    errors only mean something for written data, which {!sync} checks. *)

(** {1 Reading and writing at an offset}

    These leave the file's position alone, so fibers may use them on one file at
    once. *)

val pread : t -> bytes -> int -> int -> file_offset:int -> int
(** [pread t buf off len ~file_offset] reads at most [len] bytes of [t] from
    offset [file_offset] into [buf] at [off], and returns how many: [0] at end
    of file or if [len = 0], fewer than [len] near the end of the file or if
    [len] exceeds 1 MiB. Blocks only the calling fiber; [buf] is written only
    when the call returns.

    Raises [Invalid_argument] if [off] and [len] are not a valid range of [buf]
    or [file_offset < 0]. Raises {!Braid_io.Io_error}
    [{op = "pread"; error; detail = path}]. *)

val pread_exact : t -> bytes -> int -> int -> file_offset:int -> unit
(** [pread_exact t buf off len ~file_offset] fills the [len] bytes of [buf] at
    [off] from offset [file_offset] of [t], in as many {!pread} calls as needed.

    Raises [End_of_file] if the file ends first. Other errors as {!pread}. *)

val pwrite_all : t -> bytes -> int -> int -> file_offset:int -> unit
(** [pwrite_all t buf off len ~file_offset] writes the [len] bytes of [buf] at
    [off] to [t] at offset [file_offset], extending the file if needed. The
    bytes are copied before the call goes to the pool: [buf] may be reused as
    soon as [pwrite_all] returns or is cancelled. One pool call however large
    the write; after a cancellation the write may still complete.

    Raises [Invalid_argument] as {!pread}. Raises {!Braid_io.Io_error}
    [{op = "pwrite"; error; detail = path}]. *)

(** {1 Streaming at the file's position}

    Each of these calls moves the file's position past what it read or wrote.
    Calls on one file are serialised: two fibers that stream into the same file
    at once never interleave the parts of their writes. *)

val read_into : t -> bytes -> int -> int -> int
(** [read_into t buf off len] reads at most [len] bytes (and at most 1 MiB) into
    [buf] at [off] from the file's position, and returns how many: [0] at end of
    file or if [len = 0]. Blocks only the calling fiber; [buf] is written only
    when the call returns.

    Raises [Invalid_argument] if [off] and [len] are not a valid range of [buf].
    Raises {!Braid_io.Io_error} [{op = "read"; error; detail = path}]. *)

val read_all : t -> string
(** [read_all t] reads [t] from its position to its end, in one pool call.
    Errors as {!read_into}. *)

val write_all : t -> bytes -> int -> int -> unit
(** [write_all t buf off len] writes the [len] bytes of [buf] at [off] at the
    file's position (its end if opened with [~append:true]), copied first as for
    {!pwrite_all}.

    Raises [Invalid_argument] if [off] and [len] are not a valid range of [buf].
    Raises {!Braid_io.Io_error} [{op = "write"; error; detail = path}]. *)

val write_string : t -> string -> unit
(** [write_string t s] writes all of [s], as {!write_all}. *)

(** {1 Metadata} *)

val stat : t -> Unix.stats
(** [stat t] is the file's metadata ([fstat(2)]; sizes are exact on a 64-bit
    system). Raises {!Braid_io.Io_error} [{op = "fstat"; error; detail = path}].
*)

val size : t -> int
(** [size t] is the file's size in bytes, as {!stat}. *)

val truncate : t -> int -> unit
(** [truncate t size] cuts [t] to [size] bytes or extends it with zeros
    ([ftruncate(2)]). Raises {!Braid_io.Io_error}
    [{op = "ftruncate"; error; detail = path}]. *)

val sync : t -> unit
(** [sync t] returns once the file's data and metadata are on the disk
    ([fsync(2)]): the way to learn that earlier writes really failed. Raises
    {!Braid_io.Io_error} [{op = "fsync"; error; detail = path}]. *)
