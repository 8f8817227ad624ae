(** Responses as values: a status, header fields, and a body that is a string, a
    stream, or a region of a file.

    Handlers build them; the connection pipeline writes them. The pipeline owns
    the framing: it adds [Date], [Content-Length] or
    [Transfer-Encoding: chunked], and [Connection], and drops those fields (and
    [Date]) if a handler supplied them. A handler that wants the connection
    closed after its response says [Connection: close].

    {b A response cannot be built wrong.} Its fields are readable, but only the
    functions below build one, and they refuse, by raising [Invalid_argument] at
    construction, a status outside 100-599, a field name that is not a token
    (RFC 9110 §5.1), and a field value holding CR, LF, NUL or another control
    character but tab (§5.5). So a value taken from a request (a [?to=] query
    parameter turned into a [Location], say) cannot end its line early and
    inject fields or a whole response (response splitting): a handler that tries
    fails, which the server answers with a [500]. Blanks around a value are
    allowed (recipients ignore them); bytes from 0x80 are allowed (obs-text). *)

(** Writes the body of a {!stream} response. Made by the pipeline; valid only
    while the stream function runs (a fiber it forks may write, one at a time,
    until it returns; afterwards writing raises [Invalid_argument]). Every
    function blocks only the calling fiber (while the socket is full). *)
module Writer : sig
  type t

  val write : t -> string -> unit
  (** [write w s] sends [s] as body bytes (a chunk, in HTTP/1.1). Empty strings
      are skipped. *)

  val write_bytes : t -> bytes -> int -> int -> unit
  (** [write_bytes w buf off len] is {!write} of a slice. *)

  val flush : t -> unit
  (** [flush w] sends what is buffered now, instead of when the buffer fills or
      the stream ends. *)

  val make : write:(bytes -> int -> int -> unit) -> flush:(unit -> unit) -> t
  (** For the pipeline and tests. *)
end

type body =
  | Empty
  | String of string
  | Stream of (Writer.t -> unit)
      (** Sent with chunked coding to HTTP/1.1 clients; to HTTP/1.0 clients as
          the rest of the connection, which then closes. If the function raises
          after the head was sent, the connection is closed, so the client sees
          a truncated body. Not called for HEAD. *)
  | File of { path : string; info : File.info; offset : int; length : int }
      (** [length] bytes of the file at [path] from [offset], read through the
          file services. [info] is the stat the handler made: a cache checks the
          content against it. *)
  | Upgrade of { protocol : string; run : Upgraded.t -> unit }
      (** The connection switches to [protocol] after the [101] head: see
          {!upgrade}. Only with status [101]. *)

type t = private {
  status : int;  (** 100 to 599. *)
  headers : (string * string) list;  (** Valid names and values. *)
  body : body;
  stream_length : int option;
      (** A [Stream]'s length in bytes when its maker knows it ([stream_length]
          of {!make}, [length] of {!stream}), else [None]. It is sent as
          [Content-Length] instead of chunked coding (to a [HEAD] too, whose
          stream does not run), so the connection stays open after it for an
          HTTP/1.0 client as well. The stream must write exactly that many
          bytes: a write beyond them is not sent, and the connection closes (the
          client sees a cut body, as when a stream raises), as it does after a
          stream that wrote fewer. *)
}

val make :
  ?headers:(string * string) list -> ?stream_length:int -> int -> body -> t
(** [make ~headers status body].

    Raises [Invalid_argument] if [status] is not in 100-599, or a field of
    [headers] has a name that is not a token or a value holding CR, LF, NUL or
    another control character but tab, or if [status] is [101] and [body] is not
    an [Upgrade] or the other way round, or if [stream_length] is negative or
    given with a body other than a [Stream]. Every function below that takes a
    status or fields checks them the same way. *)

val string :
  ?status:int ->
  ?headers:(string * string) list ->
  ?content_type:string ->
  string ->
  t
(** [string body] is a [200] (or [status]) with [body] and [Content-Type]
    [content_type] (default [text/plain; charset=utf-8]). *)

val html : ?status:int -> ?headers:(string * string) list -> string -> t
(** [text/html; charset=utf-8]. *)

val stream :
  ?status:int ->
  ?headers:(string * string) list ->
  ?content_type:string ->
  ?length:int ->
  (Writer.t -> unit) ->
  t
(** [stream f] is a [200] (or [status]) whose body [f] writes, chunked unless
    [length] says how long it is ({!field-stream_length}). *)

val empty : ?headers:(string * string) list -> int -> t
(** [empty status] has no content ([Content-Length: 0] unless the status forbids
    a body). *)

val error : ?headers:(string * string) list -> int -> string -> t
(** [error status detail] is a short [text/plain] page:
    ["404 Not Found: <detail>\n"] (or without [": detail"] if empty). *)

val redirect : ?status:int -> string -> t
(** [redirect location] is a [301] (or [status]) to [location], which is checked
    as a field value: a location built from user input with a CR or LF in it is
    refused ([Invalid_argument]). *)

val upgrade :
  ?headers:(string * string) list ->
  protocol:string ->
  (Upgraded.t -> unit) ->
  t
(** [upgrade ~protocol run] answers [101 Switching Protocols] with
    [Upgrade: protocol] and [Connection: Upgrade], then hands the connection
    over: [run] is called in the connection's fiber with the socket and the
    bytes the server had already read after the request, and the connection
    closes when it returns (or raises: an exception other than the socket's own
    errors is logged as a handler failure). See {!Upgraded} for what still
    applies (the connection limit, the send timeout, graceful shutdown).

    The pipeline checks that the request asked for it: an HTTP/1.1 request whose
    [Upgrade] field lists [protocol] (case-insensitively) and whose [Connection]
    field lists [upgrade], with its body (if any) read whole. Otherwise the
    handler is at fault: the request gets a [500] and a [Handler_failed] log
    event. A protocol handshake ([Websocket.accept]) makes its own checks first
    and answers the client's mistakes with a [4xx].

    Raises [Invalid_argument] if [protocol] is not [token] or [token/token], or
    a field of [headers] is invalid. *)

val header : t -> string -> string option
(** [header r name] is the first field called [name] (case-insensitively). *)

val with_header : string -> string -> t -> t
(** [with_header name value r] adds a field after those [r] has (checked as
    {!make} does): fields go out in the order they were added. *)

val without_header : string -> t -> t
(** [without_header name r] is [r] without its fields called [name]
    (case-insensitively). *)

val wants_close : t -> bool
(** [wants_close r] is [true] if [r] has a [Connection] field listing [close].
*)

(** {1 For the static file server}

    Not exported by {!Braid_web}: only {!Static} builds responses unchecked. *)

module Private : sig
  val trusted : ?headers:(string * string) list -> int -> body -> t
  (** [trusted ~headers status body] is [make] without the checks, for the
      server's own responses, whose status and fields it writes itself from
      known-valid parts (static files: their type, dates and ranges). *)
end
