(** Why a database call failed: a logical outcome the caller handles, returned
    as [Error], never raised. Cancellation is not one of them: a cancelled
    fiber's call raises {!Braid.Cancelled}, as every blocking call does. *)

type t =
  | Connect_failed of string
      (** No connection could be opened: the server is down or refused us (the
          driver's message says why). A pool returns it from [use]. *)
  | Connection_lost of string
      (** The connection broke during the call (the server restarted or closed
          it, the socket failed, a cancelled query could not be stopped). The
          connection is unusable; a pool closes it rather than reuse it, and
          opens a new one for the next caller. *)
  | Sql of { code : string; message : string }
      (** The database refused the statement; the connection is still usable.
          [code] is PostgreSQL's SQLSTATE (["23505"] for a unique violation,
          ["57014"] for a cancelled statement) or SQLite's result code name
          (["CONSTRAINT"], ["BUSY"]); [message] is the database's text. *)
  | Wait_timeout of float
      (** A pool had no connection free within its wait timeout (the seconds
          given): every connection stayed in use. *)
  | Pool_closed  (** The pool's switch has finished. *)

val to_string : t -> string
(** [to_string e] is a one-line description for a log. *)

val pp : Format.formatter -> t -> unit
