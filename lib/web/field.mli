(** Per-request fields: values that middleware attaches to the request it passes
    on (the logged-in user, a tenant, a request id) and that handlers read, with
    their type.

    A field is a key of the fiber's context ({!Braid.Fiber.create_key}): a value
    given with {!with_value} is seen by {!get} in the code it runs, in the
    fibers that code forks and in the pool tasks it submits, on whatever domain
    they run, and nowhere else: another request (another connection's fiber)
    never sees it, and it is gone when {!with_value} returns. No request record
    is changed, so fields compose: each middleware adds its own.

    {[
      let user : string Field.t = Field.create ~name:"user" ()

      let with_user next r =
        match Handler.header r "x-user" with
        | Some u -> Field.with_value user u (fun () -> next r)
        | None -> next r

      let hello _r =
        Response.string
          ("hello " ^ Option.value (Field.get user) ~default:"stranger")

      let app = Router.(empty |> use with_user |> get "/" hello)
    ]}

    {b Streams.} The function of a {!Response.stream} runs after the handler
    returned, outside the middleware that gave the field: read fields in the
    handler and let the function close over the values.

    Never blocks; any domain, fiber or thread may call these. *)

type 'a t
(** A field holding an ['a]. *)

val create : name:string -> unit -> 'a t
(** [create ~name ()] is a new field, distinct from every other (even one of the
    same name). Make fields once, at module initialisation, and share them.
    [name] is for humans (debugging). *)

val name : 'a t -> string
(** [name field] is the name it was created with. *)

val get : 'a t -> 'a option
(** [get field] is the value that the innermost {!with_value} running around the
    caller gave [field], or [None]. *)

val with_value : 'a t -> 'a -> (unit -> 'b) -> 'b
(** [with_value field v f] runs [f ()] with [field] holding [v] there and in
    every fiber and pool task started inside, then restores what it held,
    whether [f] returns or raises (cancellation included). *)
