(** A gate a thread waits at until the test opens it: a blocking call that ends
    when the test decides (a stalled disk, a slow name server), with no timing
    involved. Any thread or domain. *)

type t

val create : unit -> t

val wait : t -> unit
(** [wait t] blocks the calling thread until [t] is open. *)

val open_ : t -> unit
(** [open_ t] lets every waiter (present and future) through. *)
