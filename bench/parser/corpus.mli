(** Realistic browser requests, each a complete HTTP/1.1 message. *)

val requests : string list
