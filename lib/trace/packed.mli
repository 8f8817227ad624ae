(* What one [Runtime_events.Type.int] event can carry. The runtime writes an
   int event itself, where a custom one costs a call back into OCaml to
   encode it (about 260 user instructions a write against 770, measured by
   callgrind); but it keeps only the low 32 bits of the integer, as a signed
   C int. The probes check [fits] and write the wide custom event (three
   integers) when a value does not, so that no value is ever cut. *)

val fits : int -> bool
(** [fits n]: [n] survives an int event ([-2{^31} <= n < 2{^31}]). *)

val fits_response : status:int -> bytes:int -> bool
(** [status] below 1024 and [bytes] below 2 MiB: {!response} fits. *)

val response : status:int -> bytes:int -> int
(** A response's status and size in one int event's 31 non-negative bits.
    Meaningful only when {!fits_response}. *)

val response_status : int -> int
val response_bytes : int -> int
