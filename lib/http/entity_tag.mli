(** Entity tags (RFC 9110 §8.8.3) and the conditions that carry them (If-Match,
    If-None-Match, If-Range). Pure values; any domain. *)

type t = private { weak : bool; opaque : string }
(** [opaque] is the tag between its double quotes. *)

val strong : string -> t
(** [strong opaque] is the strong tag ["opaque"].

    Raises [Invalid_argument] if [opaque] holds a byte an entity tag may not
    (etagc: [!], [#]–[~] but the double quote, and obs-text). *)

val of_version : inode:int -> size:int -> mtime:float -> t
(** [of_version ~inode ~size ~mtime] is the strong tag of a file in that state
    (lower-case hexadecimal of each, the time to the microsecond): any change
    that replaces or rewrites the file changes it. *)

val to_string : t -> string
(** [to_string t] is the field value: ["opaque"], or [W/"opaque"]. *)

val of_string : string -> t option
(** [of_string s] parses one entity-tag, surrounding whitespace allowed. *)

val strong_match : t -> t -> bool
(** Both strong and the same opaque tag (§8.8.3.2). *)

val weak_match : t -> t -> bool
(** The same opaque tag, weak or not. *)

type condition = Any  (** [*] *) | Tags of t list  (** [1#entity-tag] *)

val condition : string list -> condition option
(** [condition lines] is the value of an If-Match or If-None-Match field given
    as its field lines (a list across them, §5.3); [None] when there is none, or
    when a member is malformed (or [*] is not alone), so that the caller ignores
    the field. *)

val holds : condition -> (t -> bool) -> bool
(** [holds c matches] is [true] for [Any], and for [Tags tags] when [matches]
    accepts one of [tags]. *)
