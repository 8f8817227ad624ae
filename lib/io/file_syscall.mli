(** The file system calls that {!File} and {!Path} make on the threads of a
    {!Blocking} pool: reads and writes that release the runtime lock (through a
    buffer of their own, up to 1 MiB per system call), whole-file reads and
    writes, and error naming. Bounds are not checked. Never call these on an
    event loop's thread: they block it. Internal. *)

val chunk : int
(** The most bytes one system call of {!read} or {!write} moves (1 MiB). *)

val read : Unix.file_descr -> bytes -> int -> int -> at:int -> int
(** [read fd buf off len ~at] reads at most [min len chunk] bytes into [buf] at
    [off] from the file's offset [at] ([pread(2)]), or from its own position if
    [at < 0] ([read(2)]), and returns how many: [0] at end of file. EINTR is
    retried.

    Raises [Unix.Unix_error (error, "pread" | "read", "")]. *)

type bounce =
  (char, Bigarray.int8_unsigned_elt, Bigarray.c_layout) Bigarray.Array1.t
(** Memory outside the OCaml heap, which never moves: a read into it releases
    the runtime lock without a bounce through a malloc'd buffer, and a pool
    thread can fill it while the caller's bytes stay untouched. *)

val create_bounce : int -> bounce

val read_bounce : Unix.file_descr -> bounce -> int -> at:int -> int
(** [read_bounce fd bounce len ~at] is {!read} into [bounce] from its start, at
    most [min len (dim bounce)] bytes. *)

val blit_bounce : bounce -> bytes -> int -> int -> unit
(** [blit_bounce bounce buf off len] copies the first [len] bytes of [bounce] to
    [buf] at [off].

    Raises [Invalid_argument] if the ranges do not fit. *)

val write_all : Unix.file_descr -> string -> int -> int -> at:int -> unit
(** [write_all fd data off len ~at] writes the [len] bytes of [data] at [off] to
    the file's offset [at] ([pwrite(2)]), or at its own position if [at < 0]
    ([write(2)]), [chunk] bytes per system call at most.

    Raises [Unix.Unix_error (error, "pwrite" | "write", "")]. *)

val read_to_end : Unix.file_descr -> string
(** [read_to_end fd] reads [fd] from its position to its end. *)

val with_path : string -> string -> (unit -> 'a) -> 'a
(** [with_path op path f] is [f ()], with any [Unix.Unix_error (error, _, _)] it
    raises re-raised as {!Braid_io.Io_error} [{op; error; detail = path}]. *)
