(** The only things the structures take from a scheduler: the [Suspend] contract
    and fiber identity. The model-checking tests ([test/sync/dscheck]) replace
    this module with a simulated scheduler, so the structures' real code is what
    gets checked. *)

exception Cancelled
(** {!Braid.Cancelled}. *)

val suspend : ((('a, exn) result -> bool) -> 'a option) -> 'a
(** {!Braid.suspend}. *)

val self_id : unit -> int
(** {!Braid.Fiber.self_id}. *)

val protect : (unit -> 'a) -> 'a
(** {!Braid.Fiber.protect}. *)
