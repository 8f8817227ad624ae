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

    A router is the whole application the server answers with: its routes, the
    global middleware ({!use}) around everything the server answers to a
    request, and the page for the server's own errors ({!on_error}).

    Immutable: build the router once, share it between domains. *)

type t

type middleware = Handler.t -> Handler.t
(** Code around a handler: it may change the request, answer itself, or change
    the response. It runs where the handler runs (the connection's fiber), under
    the handler timeout; an exception it raises is answered as a handler's
    ([500]). *)

type error_page = Braid_http.Request.t option -> Response.t -> Response.t
(** [page request default] is the answer to send instead of [default], an error
    the server made itself; [request] is [None] for a request the parser refused
    (no request was read). *)

type found =
  | Found of {
      handler : Handler.t;
      params : (string * string) list;
      tail : string option;
          (** What a trailing [*name] matched, as sent ({!Handler.request}). *)
      max_body : int option;  (** The route's own body limit, if any. *)
    }
  | Method_not_allowed of Braid_http.Method.t list
      (** Some pattern matches the path, for these methods only: answer [405]
          with [Allow]. *)
  | Not_found

val empty : t

val add : ?max_body:int -> Braid_http.Method.t -> string -> Handler.t -> t -> t
(** [add meth pattern handler t] is [t] with one more route, tried after the
    others. [max_body] is this route's body limit in bytes, in place of the
    server's ([Braid_server.Config.t.limits]): lower or higher. A body above it
    is answered [413] naming the limit, unread if its [Content-Length] announced
    it (the connection then closes), or when a chunked body passes it. The
    server lets a declared length up to the largest route limit
    ({!largest_max_body}) through its parser; routes without [max_body] keep the
    server's limit.

    Raises [Invalid_argument] if [max_body] is negative, or [pattern] does not
    start with ["/"], has an empty parameter name, or a [*] segment that is not
    last. *)

val largest_max_body : t -> int option
(** [largest_max_body t] is the largest [max_body] of [t]'s routes (those added
    by {!scope} included), [None] if none sets one: the server's parser accepts
    a [Content-Length] up to the larger of this and the server's own limit, and
    the route found then applies its own. *)

val get : string -> Handler.t -> t -> t
(** [get pattern h] is [add GET pattern h]. *)

val post : string -> Handler.t -> t -> t
(** [post pattern h] is [add POST pattern h]. *)

val scope : ?middleware:middleware list -> string -> t -> t -> t
(** [scope ~middleware prefix sub t] is [t] with the routes of [sub] added under
    [prefix] (a pattern without [*name], trailing ["/"] ignored):
    [scope "/api" (empty |> get "/users/:id" h)] routes [/api/users/:id] to [h].
    Each of [sub]'s handlers runs inside [middleware] (the first of the list
    outermost) and then inside the global middleware of [sub] ({!use}), which is
    thus scoped to these routes. [sub]'s error page is ignored.

    Raises [Invalid_argument] if [prefix] is not a valid pattern or ends with
    [*name]. *)

val use : middleware -> t -> t
(** [use m t] adds global middleware, inside that already added: [m] sees every
    request the server reads and answers, and its response, whatever answers it:
    a route, static files (the document root), the server's own [400] (a path
    above the root), [404], [405], [413] (a body above the limit, announced by
    its [Content-Length]) and [501], and the [500] of a route's handler that
    raised (after {!on_error}'s page; middleware of a {!scope} does not see it).
    The request it sees has no [params] or [tail] yet (routing happens inside).
    A [500] or [503] that the middleware itself caused (it raised, or ran out of
    the handler timeout) is not shown to it. Requests the parser refuses, and a
    body found malformed or too large while it is read after the handler
    answered, are answered by the server directly (with {!on_error}'s page): no
    request reached the middleware, or the answer it saw is replaced. *)

val on_error : error_page -> t -> t
(** [on_error page t] makes [page] render the server's own error responses
    (status 400 and above): those listed in {!use}, static files' ([403], [404],
    [416], ...), a handler's failure ([500]) or timeout ([503]), and the
    parser's refusals ([400], [413], [414], [431], [501], [505], with no
    request). A route's own responses are never passed to it. The server keeps
    [Allow] and [Connection] of its own answer when [page]'s lacks them. If
    [page] raises, the server's answer is sent and the failure logged. *)

val wrap : t -> Handler.t -> Handler.t
(** [wrap t h] is [h] inside [t]'s global middleware. For the server. *)

val render_error : t -> error_page
(** [render_error t] is {!on_error}'s page (and the identity without one), with
    [Allow] and [Connection] kept. For the server. *)

val lookup : t -> Braid_http.Method.t -> string -> found
(** [lookup t meth path] finds the first route for [meth] whose pattern matches
    [path] (not decoded, without query). A path with a bad percent-encoding
    matches nothing. *)

val allow : Braid_http.Method.t list -> string
(** [allow methods] is the value of an [Allow] field: ["GET, HEAD, POST"]. *)

val is_empty : t -> bool
(** No route, no middleware, no error page. *)
