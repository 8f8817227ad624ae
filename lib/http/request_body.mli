(** Reads a request body from the connection's {!Input.t}, incrementally:
    Content-Length bodies and chunked bodies (RFC 9112 §7.1) with chunk
    extensions (checked, then ignored as RFC 9112 §7.1.1 asks) and trailer
    fields.

    Bytes come out as they arrive: a read returns what the window holds (at most
    the caller's length) and refills it ({!Input.val-refill}) only when the
    window is empty. The reader never consumes a byte past the body, so once it
    is finished (read to the end or {!drain}ed) the input is at the next
    pipelined request.

    Errors are values and sticky: after one, every call returns it again. They
    all have [close = true] (the framing is lost): 400 for a malformed chunk or
    a body cut short by the end of input, 413 when the decoded body exceeds
    [max_body], 431 for oversized trailers. Exceptions raised by the refill
    propagate; no other exception escapes. *)

type t

val create : ?source:string -> Input.t -> Limits.t -> Request.body -> t
(** [create input limits framing] reads the body framed by [framing] (normally
    [request.body]) from [input]. Reads nothing yet. [source] says where
    [limits.max_body] comes from, in the text of its [413]
    ({!Limits.body_too_large}). *)

val read : t -> bytes -> int -> int -> (int, Parse_error.t) result
(** [read t buf off len] copies up to [len] body bytes into [buf] at [off] and
    returns how many, at least 1, or [Ok 0] at the end of the body.

    Raises [Invalid_argument] if [len <= 0] or the range is not in [buf]. *)

val iter : t -> (bytes -> int -> int -> unit) -> (unit, Parse_error.t) result
(** [iter t f] calls [f buf off len] on each run of body bytes, in place in the
    input buffer (valid only during the call), until the end. *)

val to_string : t -> (string, Parse_error.t) result
(** [to_string t] reads the rest of the body. [max_body] bounds its size. It
    never allocates more than 64 KiB ahead of the bytes received: a head
    declaring a huge [Content-Length] reserves nothing. *)

val drain : t -> (unit, Parse_error.t) result
(** [drain t] skips the rest of the body without copying, so the next request
    can be read. *)

val is_finished : t -> bool
(** [is_finished t] is [true] once the end of the body (and its trailers) has
    been read. *)

val trailers : t -> Headers.t
(** [trailers t] is the trailer section of a chunked body, once finished; empty
    before and for other bodies. Kept apart from the header section: merging
    them is up to the application (RFC 9110 §6.5.1). *)
