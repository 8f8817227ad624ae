(** Header lists as one HTTP/2 connection of a browser carries them: the
    requests of four page loads (a navigation and 30 subresources each), with
    Chromium's fields, and the responses a static server sends them. *)

val requests : (string * string) list list
(** In the order sent; names lowercase. *)

val responses : (string * string) list list
(** One per request, in the same order. *)
