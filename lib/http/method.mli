(** Request methods Braid knows (RFC 9110 §9 and PATCH, RFC 5789).

    Methods are case-sensitive: ["get"] is a syntactically valid but unknown
    method, answered with 501. *)

type t = GET | HEAD | POST | PUT | DELETE | CONNECT | OPTIONS | TRACE | PATCH

val to_string : t -> string

val of_string : string -> t option
(** [of_string "GET" = Some GET]; exact case. *)

val of_bytes : bytes -> int -> int -> t option
(** [of_bytes buf off len] recognises the method spelt by those bytes, without
    allocating a string. *)

val pp : Format.formatter -> t -> unit
