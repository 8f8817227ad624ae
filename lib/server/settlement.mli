(** A request's body from the pipeline's side: made for the handler, and settled
    before the next request is read. Internal. *)

open Braid_web

val body_for :
  Pipeline_state.t ->
  Braid_http.Request.t ->
  Braid_http.Limits.t ->
  source:string ->
  Body.t
(** [body_for c request limits ~source] is the body of [request] under [limits]
    (the route may have its own body limit, named by [source] in the [413] that
    a chunked body above it gets), sending [100 Continue] before its first read
    if the client asked for it. It becomes [c.body], which the request loop
    closes when the exchange ends. *)

type state =
  | Consumed
      (** Read to its end (or there was none): the next request can be read. *)
  | Unread
      (** The client waits for [100 Continue], which was never sent: the body
          may never come, so the connection must close instead of draining. *)
  | Failed of Braid_http.Parse_error.t
      (** Malformed or too large: answer with this error and close. *)

val settle : Body.t -> state
(** [settle body] drains what the handler left unread, unless that would mean
    waiting for a body never invited. Blocks the fiber while it drains. *)
