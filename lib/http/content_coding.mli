(** Accept-Encoding (RFC 9110 §12.5.3): which content codings a client accepts.
    Pure; any domain. *)

val accepted : string list -> string -> bool
(** [accepted lines coding] is [true] when the Accept-Encoding field given as
    its field lines lists [coding] (case-insensitively) with a weight above 0,
    or does not list it but lists [*] with a weight above 0. No field at all
    ([lines = []]) accepts nothing here: a server sends a coding only to a
    client that asked for it. A member that cannot be read (a bad weight) is
    skipped. *)
