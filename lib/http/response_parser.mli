(** Reads one response head (status line and header section) from an {!Input.t},
    RFC 9112 §4 and §6: the client's side of {!Request_parser}, with the same
    rigour.

    Direct style, as the request parser: it scans the input's window and refills
    it only when it needs a byte past it, so it runs unchanged on a socket, a
    string or one byte at a time, and gives the same answer whatever the
    chunking. It reads no byte past the empty line that ends the head.

    {b Framing is smuggling-safe.} A response whose body's end two readers could
    place differently is refused, never guessed at: both [Content-Length] and
    [Transfer-Encoding]; several different lengths; a length that is not digits;
    [Transfer-Encoding] in an HTTP/1.0 response; a transfer coding that is not a
    list of tokens, [chunked] twice or a coding other than [chunked] (which a
    client does not decode). A connection whose response was refused must be
    closed.

    {[
      let status =
        Input.with_string "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
          (fun input ->
            match
              Response_parser.read_response ~meth:GET input Limits.default
            with
            | Ok head -> head.status
            | Error _ -> 0)
    ]} *)

type error =
  | Eof
      (** The input ended before the first byte of a response: the server closed
          the connection without answering (a keep-alive connection it had timed
          out, typically). *)
  | Invalid of Parse_error.t
      (** The response is malformed, truncated or beyond the limits. Its
          [status] is [502] (what a gateway answers in its place), its [reason]
          says what was wrong, and [close] is [true]. *)

val read_response :
  meth:Method.t -> Input.t -> Limits.t -> (Response_head.t, error) result
(** [read_response ~meth input limits] reads and consumes one response head to a
    request of method [meth] (a response to HEAD has no body, a [2xx] to CONNECT
    starts a tunnel). An interim response ({!Response_head.is_interim}) is
    returned like any other: read the next head after it.

    Refused, with the first fault in the byte stream deciding:
    - a status line longer than [limits.max_request_line], or not
      [HTTP/1.x SP 3DIGIT [SP reason]] with a status from 100 to 599 and a
      reason of visible characters, blanks and obs-text;
    - a header section beyond [limits.max_header_fields] or
      [limits.max_header_bytes], or a malformed field line (as requests' are: no
      colon, whitespace before it, obs-fold, control characters);
    - the input ending inside the head.

    Then on the complete head, the framing faults listed above, and a
    [Content-Length] above [limits.max_body]. Framing fields are checked even
    when the status says there is no body.

    Exceptions raised by the refill (a socket error, [Braid.Cancelled])
    propagate; no other exception escapes. *)
