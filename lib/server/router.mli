(** Routes: a method and a path pattern to a handler.

    A pattern is a path whose segments are literals, [:name] parameters
    (matching one non-empty segment) or, last, [*name] (matching the rest of the
    path, possibly empty, segments joined by ["/"]):
    {[
      let routes ~fib ~reverse ~files =
        Router.empty
        |> Router.add GET "/fib/:n" fib
        |> Router.add POST "/reverse" reverse
        |> Router.add GET "/files/*rest" files
    ]}
    Segments are percent-decoded before matching, so a parameter holds the
    decoded value. Routes are tried in the order they were added; lookups cost
    one pass over them. A [GET] route also answers [HEAD] (the pipeline then
    sends no body) unless a [HEAD] route matches first.

    Immutable: build the router once, share it between domains. *)

type t

type found =
  | Found of {
      handler : Handler.t;
      params : (string * string) list;
      max_body : int option;  (** The route's own body limit, if any. *)
    }
  | Method_not_allowed of Braid_http.Method.t list
      (** Some pattern matches the path, for these methods only: answer [405]
          with [Allow]. *)
  | Not_found

val empty : t

val add : ?max_body:int -> Braid_http.Method.t -> string -> Handler.t -> t -> t
(** [add meth pattern handler t] is [t] with one more route, tried after the
    others. [max_body] lowers the body limit for this route (it cannot raise it
    above the server's).

    Raises [Invalid_argument] if [pattern] does not start with ["/"], has an
    empty parameter name, or a [*] segment that is not last. *)

val lookup : t -> Braid_http.Method.t -> string -> found
(** [lookup t meth path] finds the first route for [meth] whose pattern matches
    [path] (not decoded, without query). A path with a bad percent-encoding
    matches nothing. *)

val allow : Braid_http.Method.t list -> string
(** [allow methods] is the value of an [Allow] field: ["GET, HEAD, POST"]. *)

val is_empty : t -> bool
