(** What the file services answer: file metadata, errors, and readers.

    The static file server works only through these values, so it runs the same
    on the real file system ([Braid_server.Real_services]) and on an in-memory
    one ({!module-In_memory}). *)

type kind = Regular | Directory | Symlink | Other

type info = {
  kind : kind;
  size : int;  (** Bytes. *)
  mtime : float;  (** Last modification, seconds since the epoch. *)
  ctime : float;  (** Last status change: any write or rename bumps it. *)
  device : int;
  inode : int;
}

type error =
  | Not_found  (** [ENOENT], [ENOTDIR], [ENAMETOOLONG], [ELOOP]: answer 404. *)
  | Forbidden  (** [EACCES], [EPERM]: answer 403. *)
  | Failed of string  (** Anything else: answer 500 and log it. *)

(** An opened regular file. *)
type contents =
  | In_memory of string
      (** The whole file, already in memory (a cache hit, or a test file). *)
  | Reader of {
      read : offset:int -> bytes -> int -> int -> int;
          (** [read ~offset buf off len] reads at most [len] bytes of the file
              from [offset] into [buf] at [off]; [0] at end of file. It blocks
              the calling domain for the duration of a disk read, as regular
              files cannot wait in epoll. Reads at increasing offsets are the
              fast path. *)
      close : unit -> unit;  (** Releases the descriptor; idempotent. *)
      file : Unix.file_descr option;
          (** The file's descriptor, open for reading, if the bytes are a file
              the kernel can send: a socket connection then sends them with
              sendfile(2) instead of [read] (which it may still use, for the
              same bytes, where sendfile does not apply). Valid until [close].
          *)
    }

val same_version : info -> info -> bool
(** [same_version a b] is [true] if [a] and [b] describe the same file in the
    same state: device, inode, size, mtime and ctime are equal. Content caches
    are validated with it. *)

val error_to_string : error -> string
