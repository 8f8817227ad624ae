(** From a parsed request to a response: the target form, the route (the handler
    store), the body limit, the handler under its timeout, static files when no
    route matches, and what a handler's exception becomes. Internal. *)

open Braid_web

val error_page :
  Pipeline_state.t -> Braid_http.Request.t option -> Response.t -> Response.t
(** [error_page c request response] is the application's page for the server's
    own [response] ({!Router.on_error}) when its status is 400 or more, else
    [response]. If the page raises, [response] and an error message.
    @raise exn if the page raised the connection's own exception. *)

val failure :
  Pipeline_state.t -> Braid_http.Request.t -> time:float -> exn -> Response.t
(** [failure c request ~time exn] is the answer to a handler that raised [exn]:
    a [500] (through {!error_page}), and a [Handler_failed] event (at [time],
    with the backtrace).
    @raise exn
      if it is the connection's own ({!Unwind.is_connections_own}): those unwind
      the connection. *)

val route_limit : string
(** [route_limit], [server_limit] and [largest_route_limit] say where a body
    limit comes from, in the text of its [413]
    ({!Braid_http.Limits.body_too_large}): the route's [max_body], the server's
    ([Config.t.limits]), or the largest route limit (the parser's, when it is
    above the server's). *)

val server_limit : string
val largest_route_limit : string

val dispatch :
  Pipeline_state.t ->
  Braid_http.Request.t ->
  now:float ->
  path:string ->
  query:string option ->
  Response.t * Body.t
(** [dispatch c request ~now ~path ~query] is the response to [request] (whose
    head was read at [now]; [path] and [query] split from its target) and the
    body given to its handler, to settle afterwards. Routes, handlers
    ([request.path]) and static files see [path] with its dot-segments resolved
    ({!Braid_http.Url_path.normalize}); a path climbing above the root gets
    [400]. The global middleware ({!Services.t}'s [middleware]) is around all of
    it, and the server's own errors go through {!error_page}, a handler's
    exception too (its [500], from {!failure}, is inside the middleware). A
    handler that times out ([timeouts.handler]) is cancelled and answered [503]
    with [Connection: close]. Blocks the fiber while the handler runs. *)

val answer :
  Pipeline_state.t ->
  Braid_http.Request.t ->
  now:float ->
  path:string ->
  query:string option ->
  Response.t
(** [answer c request ~now ~path ~query] is {!dispatch}'s response alone; the
    body given to the handler is [c.body] afterwards. The HTTP/1.1 pipeline's
    call: no pair allocated per request. *)

val with_request_id :
  fiber:Braid.Fiber.t option -> Braid_http.Request.t -> (unit -> 'a) -> 'a
(** [with_request_id ~fiber request serve] runs [serve ()] (the request's whole
    exchange) with the request's id ({!Log.Request_id.of_request}: its
    [traceparent]'s trace id, else a generated one) bound for the calling fiber,
    and, when tracing, marks the request's beginning in the trace. [fiber] is
    the calling fiber ({!Braid.Private.Fiber.current}, looked up once for many
    requests), on which the id is bound without an effect; [None] outside a
    fiber. Blocks as long as [serve] does. *)

val traced_end : fiber:Braid.Fiber.t option -> status:int -> bytes:int -> unit
(** [traced_end ~fiber ~status ~bytes] marks, when tracing, the end of the
    request that the calling fiber ([fiber], as for {!with_request_id}) serves:
    [status] sent, with [bytes] of content. *)
