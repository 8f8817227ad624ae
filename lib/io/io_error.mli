(** braid.io's one exception, {!Braid_io.Io_error}, and the ways to raise it.
    Internal: its face is {!Braid_io.Io_error}. *)

exception Io_error of { op : string; error : Unix.error; detail : string }
(** See {!Braid_io.Io_error}. *)

val fail : string -> Unix.error -> 'a
(** [fail op error] raises {!Io_error} [{op; error; detail = ""}]. *)

val fail_on : string -> Unix.error -> string -> 'a
(** [fail_on op error detail] raises {!Io_error} [{op; error; detail}]. *)

val of_unix : (unit -> 'a) -> 'a
(** [of_unix f] is [f ()], with [Unix.Unix_error (error, call, arg)] raised as
    {!Io_error} [{op = call; error; detail = arg}] (same backtrace). *)

val with_detail : string -> string -> (unit -> 'a) -> 'a
(** [with_detail op detail f] is [f ()], with [Unix.Unix_error (error, _, _)]
    raised as {!Io_error} [{op; error; detail}] (same backtrace): a file call
    names the path it acted on. *)

val message : exn -> string option
(** See {!Braid_io.error_message}. *)
