(** The connection pipeline: reads requests from a byte stream, dispatches them,
    writes responses. Written once against {!Capabilities.S} and instantiated
    twice ({!Server} picks one): with {!Services.Perform} (every service is an
    effect) and with {!Production.Direct} (direct calls).

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
    - a handler exception gives [500] and a {!Log.Handler_failed} event; the
      body is drained so the next request is read correctly. An exception from a
      stream after its head was sent closes the connection. *)

type outcome =
  | Peer_closed
      (** The connection ended between requests: the peer closed it, or it
          stayed idle past its timeout ({!Config.timeouts}), or the server is
          shutting down. Nothing is owed to the peer. *)
  | Server_closed
      (** The server ended the exchange (after [Connection: close], an error, or
          a request that cannot be followed). The caller should close
          gracefully: stop sending, then discard what the peer still sends for a
          moment, so that the last response is not destroyed by a reset. *)

type timer = { timeout : 'a. float -> (unit -> 'a) -> 'a option }
(** How reads and handlers are bounded in time: [timeout seconds f] is
    [Some (f ())], or [None] once [f] was cancelled after [seconds] (as
    {!Braid_io.Time.timeout}, which is what a socket connection uses). *)

type control
(** What the server and a connection's pipeline share: whether the server is
    shutting down, and whether the connection is idle (waiting for the first
    byte of a request). Confined to the connection's loop, except the shared
    flag. *)

val control : bool Atomic.t -> control
(** [control draining] is a fresh control for one connection; [draining] is the
    server's "shutting down" flag, set from any domain. *)

val is_idle : control -> bool
(** [is_idle c] is true while the connection waits for the first byte of a
    request and owes nothing: cancelling it then loses no request. *)

val idle_deadline : control -> int
(** [idle_deadline c] is when the current idle wait must end, in nanoseconds of
    {!Mtime_clock}: [timeouts.request_header] after the start for the first
    request, [timeouts.keep_alive] after the previous response for later ones.
    The pipeline does not enforce it itself (that would cost a timer per
    request): the owner of the connection cancels it once it is idle past this
    deadline, as {!Connection} does with one sweeping fiber per loop. *)

val send_stalled : control -> now:int -> bool
(** [send_stalled c ~now] (nanoseconds of {!Mtime_clock}) is true once the
    connection has been in the same write for [timeouts.send] or more, as far as
    the calls to it can tell: it remembers the write it last saw in progress and
    when, so the one caller, polling every [tick], detects a stall within
    [timeouts.send + 2 * tick] and costs the pipeline no clock read. Writes are
    handed to the socket at most 64 KiB at a time, so a client that keeps
    reading a large response is never taken for stalled. As for
    {!idle_deadline}, the owner of the connection enforces it by cancelling
    [serve]. *)

module type S = sig
  type env

  val serve :
    ?timer:timer ->
    ?control:control ->
    ?buffers:bytes * bytes ->
    env ->
    Config.t ->
    Date_cache.t ->
    peer:Unix.sockaddr option ->
    read:(bytes -> int -> int -> int) ->
    write:(bytes -> int -> int -> unit) ->
    outcome
  (** [serve env config dates ~peer ~read ~write] serves one connection until it
      ends.

      With [timer], the timeouts of [config] apply: the first request's head
      must be complete within [timeouts.request_header] of the start; between
      requests the connection may stay idle [timeouts.keep_alive] (enforced by
      the caller, see {!idle_deadline}: it cancels [serve] and closes silently);
      a head, from its first byte, must be complete within
      [timeouts.request_header] however slowly it trickles (else [408] and
      [Server_closed]); each read of a body may wait [timeouts.body] (else [408]
      if no response was started, and [Server_closed]); a handler may run
      [timeouts.handler] (else it is cancelled and the request gets [503] and
      [Connection: close]; only its blocking calls can be interrupted); each
      write may wait [timeouts.send] for the client to take data (enforced by
      the caller, see {!send_stalled}). Without [timer] (tests without a loop)
      nothing is timed.

      With [buffers = (input, output)], those are the storage of the input and
      output buffers instead of new ones of the sizes [config] gives (a server
      reuses the buffers of finished connections: they are free again when
      [serve] returns or raises).

      With [control], once its flag is set the connection finishes the request
      in progress, answers it with [Connection: close], and ends instead of
      waiting for another ([Peer_closed] if it was idle).

      [read buf off len] returns at least one byte, or [0] at end of stream;
      [write buf off len] sends everything. Both may block the fiber (a socket)
      and may raise (a reset): their exceptions come out of [serve] unchanged.
      Blocks only the calling fiber, if [read] and [write] do.
      @raise Braid.Cancelled if the fiber is cancelled while blocked. *)
end

module Make (C : Capabilities.S) : S with type env = C.env
