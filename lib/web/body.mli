(** A request's body as a handler reads it.

    It wraps {!Braid_http.Request_body} with two duties of the server: it sends
    [100 Continue] just before the first read when the client asked for it (so a
    handler that refuses a request without reading it never invites the body),
    and it remembers a malformed or oversized body so the pipeline answers with
    that error whatever the handler returned.

    Reading blocks only the calling fiber, while the connection waits for bytes.
    Any fiber of the connection's event loop may read it (the handler's, or one
    it forked): one at a time, while the request lasts (until the handler
    returns, or its streamed response ends). Otherwise the reading functions
    raise [Invalid_argument] saying which rule was broken: from another domain
    (a pool task: read the body first and pass the bytes), from two fibers at
    once, or after the request. A body made by {!of_string} has none of these
    limits. *)

type t

val create :
  ?source:string ->
  Braid_http.Input.t ->
  Braid_http.Limits.t ->
  Braid_http.Request.body ->
  continue:(unit -> unit) option ->
  in_memory:int ->
  temp_dir:string ->
  spool:Spool_budget.t ->
  t
(** [create input limits framing ~continue ~in_memory ~temp_dir ~spool] reads
    the body framed by [framing] from [input] under [limits]. [continue] (if
    any) is called once, before the first read that needs bytes from the peer:
    the pipeline passes the function that writes [100 Continue]. {!to_string}
    keeps [in_memory] bytes in memory and spools the rest to [temp_dir]
    ([Braid_server.Config.t.body_buffer]) within the budget [spool]. [source]
    says where [limits.max_body] comes from, in the text of its [413]
    ({!Braid_http.Limits.body_too_large}). *)

val empty : t
(** The body of a request without one: finished, shareable. *)

val of_string : string -> t
(** [of_string s] is a finished-looking body holding [s]: for calling handlers
    in tests without a connection. *)

val read : t -> bytes -> int -> int -> (int, Braid_http.Parse_error.t) result
(** [read t buf off len] copies up to [len] body bytes into [buf] and returns
    how many; [Ok 0] at the end.

    Raises [Invalid_argument] if [len <= 0], the range is not in [buf], or as
    the module's comment says (domain, concurrent read, request over). *)

val to_string : t -> (string, Braid_http.Parse_error.t) result
(** [to_string t] reads the rest of the body (bounded by the body limit). While
    the body arrives, at most [Braid_server.Config.t.body_buffer] bytes of it
    are held in memory: the rest waits in an unlinked temporary file, read back
    once the body is complete. So only complete bodies take their size in
    memory, and a declared length reserves nothing. The file's bytes are
    reserved from the server's {!Spool_budget} before each write and given back
    when the read ends, however it ends (cancellation included): a piece that
    does not fit is [Error] with status [503] (other bodies hold the budget; the
    server adds [Retry-After]) or [413] (the body, by its [Content-Length] or
    what it holds, is larger than the whole budget), and the connection closes.
    A failure to write or read that file (a full disk) raises [Unix.Unix_error]
    (a [500] if the handler lets it through).

    Raises [Invalid_argument] as {!read} does. *)

val drain : t -> (unit, Braid_http.Parse_error.t) result
(** [drain t] skips the rest of the body.

    Raises [Invalid_argument] as {!read} does. *)

val close : t -> unit
(** [close t] ends the request's hold on [t]: later reads raise
    [Invalid_argument]. The pipeline calls it once the exchange is settled. *)

val is_finished : t -> bool
(** [is_finished t] is [true] once the whole body has been read (at once for
    requests without a body). *)

val failure : t -> Braid_http.Parse_error.t option
(** [failure t] is the error a read returned, if one did. *)

val continue_pending : t -> bool
(** [continue_pending t] is [true] while the client waits for [100 Continue]
    that was not sent (no read yet): the body may never come, so the connection
    must not wait for it. *)
