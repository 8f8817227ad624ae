(** The connection pipeline: reads requests from a byte stream, dispatches them
    ([Dispatch]), writes responses ([Framing]). Knows nothing of sockets: a
    socket connection ({!Connection}) and an in-memory test both run it.

    Per connection: one {!Braid_http.Input.t} for its whole life (pipelined
    bytes stay for the next request), one {!Output.t}. Responses are gathered in
    the output buffer and sent when the connection is about to wait for input,
    so a response usually costs one write and pipelined responses share writes;
    they always leave in request order.

    What it guarantees on the wire (RFC 9110, RFC 9112):
    - every response has [Date] (cached per second) and, unless chunked, its
      status forbids content (1xx, 204, 304) or it is a close-delimited stream
      to an HTTP/1.0 client, [Content-Length]; HEAD gets the length GET would
      get and no content;
    - keep-alive by default in HTTP/1.1, in HTTP/1.0 only when asked (then
      answered with [Connection: keep-alive]); [Connection: close] on the last
      response of a connection the server closes;
    - [100 Continue] is sent only when the handler starts reading the body; a
      request whose body was never invited ends the connection instead of being
      drained;
    - a request the parser rejects gets its status (400, 413, 414, 431, 501,
      505) and the connection goes on when the parser says the stream is still
      in sync;
    - a malformed or oversized body gets its status (400, 413) and the
      connection closes, whatever the handler answered;
    - a handler exception gives [500] and a {!Braid_web.Log.Handler_failed}
      event; the body is drained so the next request is read correctly. An
      exception from a stream after its head was sent closes the connection.

    Internal: the public ways to run it are {!Server} and
    {!Braid_web.In_memory}. *)

open Braid_web
open Braid_web.Private

type outcome =
  | Peer_closed
      (** The connection ended between requests: the peer closed it, or it
          stayed idle past its timeout, or the server is shutting down. Nothing
          is owed to the peer. *)
  | Server_closed
      (** The server ended the exchange (after [Connection: close], an error, or
          a request that cannot be followed). The caller should close
          gracefully: stop sending, then discard what the peer still sends for a
          moment, so that the last response is not destroyed by a reset. *)
  | Parked
      (** Only with [~fiberless:true]: the connection is idle, holds no buffer,
          and waits for its next request with no fiber of its own. The caller
          watches for input and calls [serve ~resumed:true] with the same
          [control] when it comes. *)

val serve :
  ?control:Control.t ->
  ?buffers:
    [ `Bytes of bytes * bytes
    | `Storage of Braid_http.Input.storage * Braid_http.Input.storage ] ->
  ?await_input:(Control.t -> unit) ->
  ?fixed_services:Services.t ->
  ?file_sender:(unit -> Conn.file_sender) ->
  ?fiberless:bool ->
  ?resumed:bool ->
  Config.t ->
  Head_cache.t ->
  peer:Unix.sockaddr option ->
  read:(bytes -> int -> int -> int) ->
  write:(bytes -> int -> int -> unit) ->
  outcome
(** [serve config dates ~peer ~read ~write] serves one connection until it ends,
    with the services in force ({!Braid_web.Services.current}, looked up once:
    the handlers around the connection cannot change while it runs), or
    [fixed_services] (the benchmarks' baseline: no effect at all).

    The timeouts of [config] apply, on the services' clock: the first request's
    head must be complete within [timeouts.request_header] of the start; between
    requests the connection may stay idle [timeouts.keep_alive] (enforced by the
    loop's sweeper, see [Control.idle_deadline]: it cancels [serve], which then
    returns [Peer_closed]); a head, from its first byte, must be complete within
    [timeouts.request_header] however slowly it trickles (else [408] and
    [Server_closed]); each read of a body may wait [timeouts.body] (else [408]
    if no response was started, and [Server_closed]); a handler may run
    [timeouts.handler] (else it is cancelled and the request gets [503] and
    [Connection: close]; only its blocking calls can be interrupted); each write
    may wait [timeouts.send] for the client to take data (enforced by the
    sweeper, see [Control.send_stalled]). Writes are handed to [write] at most
    64 KiB at a time (files sent by [file_sender], 256 KiB), so a client that
    keeps reading a large response is never taken for stalled.

    With [buffers = `Bytes (input, output)], those are the storage of the input
    and output buffers instead of new ones of the sizes [config] gives (they are
    free again when [serve] returns or raises); with [`Storage (input, output)]
    buffers are taken from there when needed and given back when the connection
    waits. With [await_input] (a function that returns once the connection has
    bytes to read, without reading them), the connection waits for each request
    after the first holding no buffer.

    An idle wait in [await_input] may raise [Unwind.Park] (at once, or when the
    sweeper interrupts it), once the connection's buffers are given back; so may
    the read for a request's first bytes ([read], interrupted by the sweeper
    when it waits: [await_input] returned with nothing to read), and the buffers
    are then given back here. The connection then leaves the handlers it runs in
    (the fiber's), whose fiber stacks grew while serving requests, calls
    [await_input] again outside them with [control.parked] set (that call must
    not raise [Park]), and goes back in when it returns, with the same idle
    deadline. An idle keep-alive connection thus holds one small stack. With
    [fiberless] (default false), [serve] returns [Parked] instead of calling
    [await_input] again, and the caller's fiber may end: [serve ~resumed:true]
    with the same [control] goes on where it left off (the deadlines are those
    of [control]; it reads at once, as if [await_input] had returned).

    With [control], once its flag is set the connection finishes the request in
    progress, answers it with [Connection: close], and ends instead of waiting
    for another ([Peer_closed] if it was idle).

    The connection's input reads with [read] itself (it is its own reader,
    {!Braid_http.Input.create}[ ~read]): a fiber the handler forks may read the
    request body ({!Braid_web.Body}) with no handler to inherit.

    With [file_sender] (a socket connection), files are sent from their
    descriptors with sendfile(2) ([Framing.write_file]), by a sender made when
    the first file is sent; its functions count as writes for the send timeout,
    and their exceptions come out of [serve] as [write]'s do.

    [read buf off len] returns at least one byte, or [0] at end of stream;
    [write buf off len] sends everything. Both may block the fiber (a socket)
    and may raise (a reset): their exceptions come out of [serve] unchanged.
    Blocks only the calling fiber, if [read] and [write] do.
    @raise Braid.Cancelled if the fiber is cancelled while blocked. *)
