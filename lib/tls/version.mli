(** The protocol to create contexts with. Internal. *)

val flexible : Ssl.protocol
