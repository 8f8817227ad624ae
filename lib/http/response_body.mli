(** Reads a response body from the connection's {!Input.t}, incrementally, as
    {!Request_body} reads a request's: [Content-Length] and chunked bodies by
    the same code, and bodies that end when the server closes the connection
    ({!Response_head.Until_close}).

    Bytes come out as they arrive; the input is refilled only when its window is
    empty, and never read past the body. Errors are values and sticky, all with
    [status = 502] and [close = true]: a malformed chunk, a body cut short by
    the end of input (a [Content-Length] or chunked body: an
    {!Response_head.Until_close} one ends there), a body above [max_body],
    oversized trailers. Exceptions raised by the refill (a socket error,
    [Braid.Cancelled]) propagate; no other exception escapes.

    {[
      let body =
        Input.with_string "HTTP/1.1 200 OK\r\n\r\nuntil the end" (fun input ->
            match
              Response_parser.read_response ~meth:GET input Limits.default
            with
            | Error _ -> None
            | Ok head ->
                Result.to_option
                  (Response_body.to_string
                     (Response_body.create input Limits.default head.body)))
    ]} *)

type t

val create : Input.t -> Limits.t -> Response_head.body -> t
(** [create input limits framing] reads the body framed by [framing] (normally
    [head.body]) from [input], at most [limits.max_body] bytes. Reads nothing
    yet. *)

val read : t -> bytes -> int -> int -> (int, Parse_error.t) result
(** [read t buf off len] copies up to [len] body bytes into [buf] at [off] and
    returns how many, at least 1, or [Ok 0] at the end of the body.

    Raises [Invalid_argument] if [len <= 0] or the range is not in [buf]. *)

val iter : t -> (bytes -> int -> int -> unit) -> (unit, Parse_error.t) result
(** [iter t f] calls [f buf off len] on each run of body bytes, in place in the
    input buffer (valid only during the call), until the end. *)

val to_string : t -> (string, Parse_error.t) result
(** [to_string t] reads the rest of the body ([max_body] bounds it). *)

val drain : t -> (unit, Parse_error.t) result
(** [drain t] skips the rest of the body. *)

val is_finished : t -> bool
(** [true] once the end of the body (and its trailers) has been read. *)

val trailers : t -> Headers.t
(** The trailer section of a chunked body, once finished; else empty. *)
