(** Query strings and [application/x-www-form-urlencoded] content, decoded.

    [name=value] pairs separated by [&] (WHATWG URL Standard, "application/x-
    www-form-urlencoded parsing"): in names and values [+] is a space and [%XX]
    a byte; a pair without [=] has the empty value; empty pairs ([a=1&&b=2]) are
    skipped; order and repetitions are kept. Unlike browsers, a [%] not followed
    by two hexadecimal digits is an error (browsers keep it as it is): the
    client gets a clear [400], never a value that silently differs from what it
    meant.

    Pure functions: they block nothing and may run anywhere. *)

val decode : string -> ((string * string) list, string) result
(** [decode "a=1&b=x+y%21"] is [Ok [("a", "1"); ("b", "x y!")]]. [Error why] for
    a malformed percent-encoding, naming the pair. *)

val params : Handler.request -> ((string * string) list, Response.t) result
(** [params r] is the decoded query of [r] ([[]] without one), or a [400] saying
    what is malformed. *)

val get : Handler.request -> string -> (string option, Response.t) result
(** [get r name] is the first value of [name] in the query of [r] ([None] if
    absent), or a [400] if the query is malformed. *)

val get_all : Handler.request -> string -> (string list, Response.t) result
(** [get_all r name] is every value of [name], in order. *)

val encode : (string * string) list -> string
(** [encode pairs] is the urlencoded form of [pairs] (space as [+], every byte
    but [A-Za-z0-9*-._] percent-encoded): [decode (encode p) = Ok p]. *)
