(** A fiber's context: the values bound for it and the effect handlers it
    inherits, as an immutable value.

    Each fiber holds one ({!Fiber.context}); a fiber forked inherits its
    parent's, so values bound with {!Fiber.with_binding} and handlers installed
    with {!Fiber.with_handler} follow every fiber forked below them, on every
    scheduler. This module is the value itself; {!Fiber} reads and changes the
    calling fiber's. *)

type t
(** A context. Immutable: safe to share between domains. *)

val empty : t
(** No bindings, no inherited handlers: the context of a fiber started from a
    thread that never bound anything. *)

(** {1 Bindings} *)

type 'a key
(** Names a value of type ['a] in contexts. *)

val create_key : ?name:string -> unit -> 'a key
(** [create_key ()] is a new key, distinct from every other. [name] is for
    debugging only. *)

val find : 'a key -> t -> 'a option
(** [find key t] is the value [key] is bound to in [t]. *)

val add : 'a key -> 'a -> t -> t
(** [add key v t] is [t] with [key] bound to [v] (replacing a binding). *)

val remove : 'a key -> t -> t

(** {1 Inherited effect handlers} *)

type handler = { run : 'a. (unit -> 'a) -> 'a }
(** [run f] calls [f ()] with an effect handler installed around it, and returns
    (or raises) what [f] does. It must install the handler only, not register it
    again with {!Fiber.with_handler}: re-applied to every fiber forked below, a
    registering [run] would stack a copy per generation. *)

val add_handler : handler -> t -> t
(** [add_handler h t] is [t] with [h] innermost. *)

val run_handlers : t -> (unit -> 'a) -> 'a
(** [run_handlers t f] runs [f ()] inside every handler of [t], the first added
    outermost: what a fiber started with context [t] runs its body in. *)
