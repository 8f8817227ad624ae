(** The client of the reverse-post benchmark: one keep-alive connection,
    requests one after the other, as the 2022 study's client. Blocking. *)

type t

val connect : port:int -> t
val close : t -> unit

type request

val request : port:int -> string -> request
(** [request ~port body] is a curl-like [POST /reverse] request carrying [body],
    prepared once. *)

val post : t -> request -> unit
(** [post t request] sends [request] and reads the whole response.
    @raise Failure
      unless the answer is a [200] with a body as long as the request's. *)

val get : t -> string -> string
(** [get t path] is the body of [GET path] on the same connection. *)

val check_reverse : t -> port:int -> string -> unit
(** [check_reverse t ~port body] posts [body] and checks the answer is it
    reversed.
    @raise Failure otherwise. *)
