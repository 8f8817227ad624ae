(** JSON bodies, as [Yojson.Safe.t] values (the yojson library).

    {!body} reads the request body: it blocks the handler's fiber until the body
    has arrived, within the route's body limit, and must be called from the
    handler's fiber or a fiber it forked (see {!Body}); it is cancelled with the
    handler ({!Braid.Cancelled}). {!response} is pure. *)

val body : Handler.request -> (Yojson.Safe.t, Response.t) result
(** [body r] is the JSON document that is [r]'s body. [Error] is the answer the
    client deserves: [415] if [r] has a [Content-Type] that is neither
    [application/json] nor [*/*+json] (none is accepted), [400] saying where the
    document is invalid (empty, truncated, trailing bytes, bad syntax), the
    body's own status ([400], [408], [413]) if it could not be read. *)

val response :
  ?status:int -> ?headers:(string * string) list -> Yojson.Safe.t -> Response.t
(** [response json] is a [200] (or [status]) with [json] as its body and
    [Content-Type: application/json].

    Raises [Invalid_argument] as {!Response.string}. *)
