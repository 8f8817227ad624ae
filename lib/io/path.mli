(** Files and directories by path name, in direct style: metadata, directory
    listings, creation, renaming and removal, symbolic links, and whole-file
    loads and saves.

    {[
      let index_photos () =
        Path.mkdir ~parents:true "cache/thumbs";
        Path.save "cache/index" (String.concat "\n" (Path.read_dir "photos"));
        match Path.kind "cache/lock" with
        | Some S_REG -> print_endline "locked"
        | Some _ | None -> ()
    ]}

    Like {!File}'s, every function here runs its system calls on a thread of the
    calling fiber's {!Blocking} pool and blocks only the calling fiber; any
    fiber of any Braid scheduler may call them, as may a bare thread (which they
    block). A function makes one pool round trip, however many system calls it
    needs ([mkdir ~parents:true] of a deep path, say).

    {b Cancellation.} A fiber cancelled during a call is woken at once with
    {!Braid.Cancelled}; a call not started yet never runs, one already running
    (a [rename], a [save]) completes on its pool thread.

    {b Errors.} Failures raise {!Braid_io.Io_error} [{op; error; detail}]: [op]
    names the system call (["stat"], ["mkdir"], ...) and [detail] is the path
    the function was given (the source for {!rename}, the link for {!symlink}),
    never an intermediate one. *)

(** {1 Metadata} *)

val stat : ?follow:bool -> string -> Unix.stats
(** [stat ~follow path] is [path]'s metadata. With [~follow:true] (the default)
    a symbolic link is followed ([stat(2)]); with [~follow:false] the link
    itself is described ([lstat(2)]).

    Raises {!Braid_io.Io_error} [{op = "stat" | "lstat"; error; detail = path}].
*)

val kind : ?follow:bool -> string -> Unix.file_kind option
(** [kind ~follow path] is the kind of file at [path], or [None] if there is
    none ([ENOENT], or [ENOTDIR] for a path through a regular file). [follow] as
    for {!stat}: a dangling symbolic link is [None] when followed, [Some S_LNK]
    when not. Other errors as {!stat}. *)

val exists : ?follow:bool -> string -> bool
(** [exists ~follow path] is [kind ~follow path <> None]. *)

(** {1 Directories} *)

val read_dir : string -> string list
(** [read_dir dir] is the names of [dir]'s entries, sorted ([String.compare]),
    without ["."] and [".."].

    Raises {!Braid_io.Io_error}
    [{op = "opendir" | "readdir"; error; detail = dir}]. *)

val mkdir : ?perm:int -> ?parents:bool -> string -> unit
(** [mkdir ~perm ~parents dir] creates the directory [dir] with permissions
    [perm] (default [0o777], filtered by the umask). With [~parents:true]
    (default [false]) missing parent directories are created too, and a
    directory already at [dir] is no error, as with [mkdir -p].

    Raises {!Braid_io.Io_error} [{op = "mkdir"; error; detail = dir}] ([EEXIST]
    if [dir] exists, without [~parents:true] or if it is no directory). *)

val rmdir : string -> unit
(** [rmdir dir] removes the empty directory [dir].

    Raises {!Braid_io.Io_error} [{op = "rmdir"; error; detail = dir}]. *)

(** {1 Names} *)

val rename : string -> string -> unit
(** [rename src dst] renames [src] to [dst], atomically replacing a file at
    [dst] ([rename(2)]: both on one file system).

    Raises {!Braid_io.Io_error} [{op = "rename"; error; detail = src}]. *)

val unlink : string -> unit
(** [unlink path] removes the name [path] (a file, or a symbolic link itself,
    never a directory). Raises {!Braid_io.Io_error}
    [{op = "unlink"; error; detail = path}]. *)

val realpath : string -> string
(** [realpath path] is the absolute path of [path] with every symbolic link,
    ["."] and [".."] resolved. Raises {!Braid_io.Io_error}
    [{op = "realpath"; error; detail = path}] ([ENOENT] if something on the way
    does not exist). *)

val symlink : target:string -> string -> unit
(** [symlink ~target link] creates the symbolic link [link] pointing to [target]
    (which need not exist; a relative [target] is relative to [link]'s
    directory).

    Raises {!Braid_io.Io_error} [{op = "symlink"; error; detail = link}]. *)

val readlink : string -> string
(** [readlink link] is the target of the symbolic link [link], unresolved.
    Raises {!Braid_io.Io_error} [{op = "readlink"; error; detail = link}]
    ([EINVAL] if [link] is no symbolic link). *)

(** {1 Whole files} *)

val load : string -> string
(** [load path] is the contents of the file [path]: open, read and close in one
    pool call. Raises {!Braid_io.Io_error}
    [{op = "open" | "read"; error; detail = path}]. *)

val save : ?perm:int -> ?append:bool -> string -> string -> unit
(** [save ~perm ~append path data] writes [data] to the file [path], created
    with permissions [perm] (default [0o666], filtered by the umask) if it does
    not exist, emptied first unless [~append:true] (default [false]): open,
    write and close in one pool call. Not atomic: a reader may see a partial
    file (write another name and {!rename} it for that).

    Raises {!Braid_io.Io_error}
    [{op = "open" | "write" | "close"; error; detail = path}]. *)
