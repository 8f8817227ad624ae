(** Buffers of one size, kept for reuse by the connections of one loop: a
    connection holds its input and output buffers only while it reads or writes
    a request, and gives them back when it waits for the next one. Confined to
    the loop's domain. Internal. *)

type t

val create : size:int -> keep:int -> t
(** [create ~size ~keep] hands out buffers of [size] bytes and keeps of those
    given back as many as were out at once since the last {!trim} (what the next
    burst will take again), at least [keep] and at most [16 * keep]. *)

val size : t -> int

val take : t -> bytes
(** [take t] is a kept buffer, or a new one. Its contents are unspecified. *)

val give : t -> bytes -> unit
(** [give t b] keeps [b] for a later {!take} if it has [t]'s size and there is
    room; else drops it (a buffer grown for a long head, say). *)

val kept : t -> int

val out : t -> int
(** Buffers taken and not given back: held by connections now (a buffer that
    grew, or was dropped with its connection, stops counting when its
    replacement is given back; an estimate). *)

val trim : t -> unit
(** [trim t] drops every kept buffer, and forgets the bursts seen. *)

(** {1 As storage}

    What {!Braid_http.Input} and {!Output} take their storage from. *)

val storage : t -> Braid_http.Input.storage
(** [storage t] takes from and gives back to [t]. *)
