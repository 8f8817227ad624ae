(** A request's body as a handler reads it.

    It wraps {!Braid_http.Request_body} with two duties of the server: it sends
    [100 Continue] just before the first read when the client asked for it (so a
    handler that refuses a request without reading it never invites the body),
    and it remembers a malformed or oversized body so the pipeline answers with
    that error whatever the handler returned.

    Reading blocks only the calling fiber, while the connection waits for bytes.
    Use it only from the handler's fiber, during the request. *)

type t

val create :
  Braid_http.Input.t ->
  Braid_http.Limits.t ->
  Braid_http.Request.body ->
  continue:(unit -> unit) option ->
  t
(** [create input limits framing ~continue] reads the body framed by [framing]
    from [input] under [limits]. [continue] (if any) is called once, before the
    first read that needs bytes from the peer: the pipeline passes the function
    that writes [100 Continue]. *)

val empty : t
(** The body of a request without one: finished, shareable. *)

val of_string : string -> t
(** [of_string s] is a finished-looking body holding [s]: for calling handlers
    in tests without a connection. *)

val read : t -> bytes -> int -> int -> (int, Braid_http.Parse_error.t) result
(** [read t buf off len] copies up to [len] body bytes into [buf] and returns
    how many; [Ok 0] at the end.
    @raise Invalid_argument if [len <= 0] or the range is not in [buf]. *)

val to_string : t -> (string, Braid_http.Parse_error.t) result
(** [to_string t] reads the rest of the body (bounded by the body limit). *)

val drain : t -> (unit, Braid_http.Parse_error.t) result
(** [drain t] skips the rest of the body. *)

val is_finished : t -> bool
(** [is_finished t] is [true] once the whole body has been read (at once for
    requests without a body). *)

val failure : t -> Braid_http.Parse_error.t option
(** [failure t] is the error a read returned, if one did. *)

val continue_pending : t -> bool
(** [continue_pending t] is [true] while the client waits for [100 Continue]
    that was not sent (no read yet): the body may never come, so the connection
    must not wait for it. *)
