(** Near-valid JSON texts for the reader's fuzz and differential tests. *)

val document : int -> string
(** [document seed] is a JSON text drawn from [seed] (the same for the same
    seed): mostly an RFC 8259 document, at most a few levels deep or, rarely,
    500 to 524 deep; with tokens swapped for invalid ones, bytes mutated or the
    text cut short often enough that every class of error the reader refuses
    turns up in a few thousand seeds. *)

val bypasses : string list
(** Issue 39's bodies (a comment hiding up to 499,000 opening brackets from a
    depth scan) and documents nested 512 deep, 513 deep and 1,000,000 deep. *)
