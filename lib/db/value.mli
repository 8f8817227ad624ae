(** A value that crosses the boundary with a database: a statement's parameter
    or a row's column.

    Each driver maps its own types onto these six (see the driver's
    documentation for the mapping); what has no better match is {!Text}, in the
    database's own notation (a PostgreSQL [numeric] or [timestamptz], say), for
    the caller to parse. *)

type t =
  | Null  (** SQL [NULL]. *)
  | Bool of bool
  | Int of int  (** 63 bits: a larger integer column comes back as {!Text}. *)
  | Float of float
  | Text of string  (** UTF-8 text. PostgreSQL refuses a NUL byte in it. *)
  | Blob of string  (** Bytes, [bytea] or [BLOB]. *)

val to_int : t -> int option
(** [to_int v] is [Some i] for [Int i], else [None]. *)

val to_float : t -> float option
(** [to_float v] is [Some f] for [Float f] and [Int] (converted), else [None].
*)

val to_bool : t -> bool option
(** [to_bool v] is [Some b] for [Bool b] and, as SQLite stores booleans, [Int 0]
    and [Int 1]; else [None]. *)

val to_text : t -> string option
(** [to_text v] is [Some s] for [Text s] and [Blob s], else [None]. *)

val equal : t -> t -> bool
(** Structural equality; [Float nan] equals itself. *)

val pp : Format.formatter -> t -> unit
(** [pp] prints a value for humans: [NULL], [true], [42], [1.5], ["text"]
    (quoted, escaped), [<blob of 3 bytes>]. *)
