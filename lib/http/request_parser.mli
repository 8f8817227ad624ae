(** Reads one request head (request line and header section) from an {!Input.t},
    RFC 9112 §2-§6.

    Direct style: it scans the input's window with index arithmetic and refills
    it ({!Input.val-refill}: the input's own reader, or the {!Input.Refill}
    effect) only when it needs a byte past the window, so it runs unchanged on a
    socket, a string or one byte at a time. It reads no byte past the empty line
    that ends the head: the body, and any pipelined request after it, stay in
    the input.

    {b Driving a connection.} Keep one {!Input.t} per connection, with its own
    reader ({!Input.create}[ ~read]) or under a refill handler
    ({!Input.handle}). Loop: [read_request]; on [Ok request], answer
    [100 Continue] first if [request.expect_continue] and the body is wanted,
    read or drain the body with {!Request_body} (this must be done before the
    next [read_request], or the body would be read as the next request),
    respond, and go on while [request.keep_alive]. On [Error Eof] close quietly.
    On [Error (Invalid e)] respond with [e.status] and close if [e.close]. *)

type error =
  | Eof
      (** The input ended cleanly before the first byte of a request (blank
          lines aside): the peer closed an idle connection. *)
  | Invalid of Parse_error.t
      (** The request is invalid or truncated; answer [status]. *)

val read_request :
  ?source:string -> Input.t -> Limits.t -> (Request.t, error) result
(** [read_request input limits] reads and consumes one request head, and nothing
    after it. [source] says where [limits.max_body] comes from, in the text of
    its [413] ({!Limits.body_too_large}).

    Blank lines before the request line are skipped (RFC 9112 §2.2). A lone LF
    is accepted as a line ending; a CR anywhere else is not.

    While reading, the first fault in the byte stream decides the answer (the
    same one whatever the chunking):
    - 414: request line longer than [limits.max_request_line];
    - 400: malformed request line: method not a token, not exactly one space
      between the parts, a target byte outside visible ASCII, version not
      [HTTP/d.d]; a target whose form does not fit the method ([*] other than
      for OPTIONS, CONNECT without [host:port]); bare CR; NUL; input ending
      inside the head;
    - 505: a version other than HTTP/1.x (e.g. [HTTP/2.0]);
    - 431: more than [limits.max_header_fields] fields, or a header section
      longer than [limits.max_header_bytes];
    - 400: malformed field line: no colon, empty name, whitespace before the
      colon, obs-fold, control characters or NUL in the value.

    Then, on the complete head, in this order:
    - 400: Transfer-Encoding in HTTP/1.0; Transfer-Encoding with Content-Length;
      a Transfer-Encoding value that is not a list of transfer codings (tokens
      with parameters; chunked with none); chunked applied twice; empty
      Transfer-Encoding; a final transfer coding other than chunked (RFC 9112
      §6.3);
    - 501: another coding before chunked;
    - 400: invalid or conflicting Content-Length (one value repeated, in a list
      or in several fields, is accepted, RFC 9112 §6.3);
    - 413: Content-Length above [limits.max_body];
    - 400: HTTP/1.1 without a Host field, several Host fields, or a Host value
      that is not [uri-host [":" port]] (RFC 9112 §3.2);
    - 501: a valid but unknown method.

    The last two leave the input at the next request when the request has no
    body ([close] is then [not keep_alive]); every other error has
    [close = true]. Exceptions raised by the refill (a socket error,
    [Braid.Cancelled]) propagate; no other exception escapes. *)
