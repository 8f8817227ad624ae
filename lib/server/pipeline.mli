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
      (** The connection is idle, holds no buffer, and waits for its next
          request outside the handlers the pipeline ran in: asked by
          [Unwind.Park] (see {!transport.await_input}). The caller waits for
          input as it likes (in the same fiber, or with none) and then calls
          {!resume} with this pipeline or one made anew by {!create} with the
          same [progress]: it reads at once, keeping the deadlines it had. Never
          returned to a caller whose transport cannot be interrupted. *)

type file_sender = Output.file_sender = {
  write_more : bytes -> int -> int -> unit;
  send_file : Unix.file_descr -> off:int -> len:int -> int;
}
(** How a socket connection sends a file without copying it through the process
    ({!Output.file_sender}). *)

type progress = Progress.t
(** A connection's phase and deadlines, shared with the loop's sweeper. *)

type buffers = {
  input : Braid_http.Input.storage;
  output : Braid_http.Input.storage;
}
(** Where a connection takes its input and output buffers from when it needs
    them, and gives them back to when it waits (a loop's buffer pools). *)

type config = {
  server : Config.t;  (** Limits, timeouts, buffer sizes, document root. *)
  dates : Head_cache.t;  (** The [Date] field and rendered heads. *)
  progress : progress;
      (** The connection's phase and deadlines, shared with the loop's sweeper;
          it outlives a pipeline made anew after parking. *)
  buffers : buffers option;
      (** [None]: buffers of the connection's own, of the sizes [server] gives,
          dropped with it. *)
}
(** What the pipeline of one connection is set up with, apart from the bytes and
    the application. *)

type transport = {
  peer : Unix.sockaddr option;
  read : bytes -> int -> int -> int;
      (** [read buf off len] returns at least one byte, or [0] at end of stream.
      *)
  write : bytes -> int -> int -> unit;  (** [write buf off len] sends all. *)
  await_input : (unit -> unit) option;
      (** Returns once the connection has bytes to read, without reading them:
          the pipeline then waits for each request after the first holding no
          buffer. *)
  file_sender : (unit -> file_sender) option;
      (** Makes a sender of files by sendfile(2) ([Framing.write_file]), when
          the first file is sent; [None]: files are read and written. *)
  alpn : unit -> string option;
      (** The protocol the client chose by TLS's ALPN, asked once its first
          bytes are read (its handshake is done by then); [fun () -> None] where
          there is none. [Some "h2"] promises HTTP/2's preface: a connection
          that sends something else is closed with a GOAWAY PROTOCOL_ERROR, not
          answered as HTTP/1.1 (RFC 9113 §3.4). *)
}
(** How bytes move: a plain socket, a TLS session and an in-memory test each
    build one. [read], [write] and the sender's functions may block the fiber (a
    socket) and may raise (a reset): their exceptions come out of {!serve} and
    {!resume} unchanged.

    An idle wait in [await_input] may raise [Unwind.Park] (at once, or when the
    sweeper interrupts it), once the connection's buffers are given back; so may
    [read] for a request's first bytes (interrupted by the sweeper when it
    waits: [await_input] returned with nothing to read), and the buffers are
    then given back here. The pipeline then returns {!Parked}. *)

type t
(** One connection's pipeline: its buffers (taken when needed), its parser input
    and output, the request in progress. Owned by the fiber that runs it. *)

val standalone : Config.t -> Head_cache.t -> config
(** [standalone server dates] is the setup of a connection no sweeper watches
    and no server drains, with buffers of its own (tests, {!Testing}). *)

val create : ?secure:bool -> config -> transport -> Braid_web.Services.t -> t
(** [create config transport services] is the pipeline of one connection over
    [transport], answered by [services]: the services in force around the
    connection, which the caller looks up once ({!Braid_web.Services.current};
    the handlers around a connection cannot change while it runs), or any record
    (the benchmarks' direct-calls baseline gives the production one). The
    pipeline calls the record's functions directly. Handlers it runs perform
    their own service calls: the caller runs {!serve} where the same services
    are in force.

    Writes are handed to [transport.write] at most 64 KiB at a time (files sent
    by its [file_sender], 256 KiB), so a client that keeps reading a large
    response is never taken for stalled. The connection's input reads with
    [transport.read] itself (it is its own reader,
    {!Braid_http.Input.create}[ ~read]): a fiber the handler forks may read the
    request body ({!Braid_web.Body}) with no handler to inherit. Does no I/O.

    [secure] (default [false]): the connection is over TLS, as handlers see in
    {!Braid_web.Handler.request.secure}. *)

val serve : t -> outcome
(** [serve t] starts the connection's deadlines ([Progress.start]) and serves
    requests until it ends or parks.

    The timeouts of [config.server] apply, on the services' clock: the first
    request's head must be complete within [timeouts.request_header] of the
    start; between requests the connection may stay idle [timeouts.keep_alive]
    (enforced by the loop's sweeper, see [Progress.idle_deadline]: it cancels
    the fiber, and [serve] raises {!Braid.Cancelled}); a head, from its first
    byte, must be complete within [timeouts.request_header] however slowly it
    trickles (else [408] and [Server_closed]); each read of a body may wait
    [timeouts.body] (else [408] if no response was started, and
    [Server_closed]); a handler may run [timeouts.handler] (else it is cancelled
    and the request gets [503] and [Connection: close]; only its blocking calls
    can be interrupted); each write may wait [timeouts.send] for the client to
    take data (enforced by the sweeper, see [Progress.send_stalled]). Sends and
    the file sender's calls count as writes for the send timeout.

    Once [progress.draining] is set the connection finishes the request in
    progress, answers it with [Connection: close], and ends instead of waiting
    for another ([Peer_closed] if it was idle).

    Its buffers (from [config.buffers]) are given back to their pool when it
    returns. Blocks only the calling fiber, if the transport does.
    @raise Braid.Cancelled if the fiber is cancelled while blocked. *)

val resume : t -> outcome
(** [resume t] is {!serve} for a connection whose deadlines are set already:
    after {!Parked} (it reads at once, as if [await_input] had returned), or one
    whose caller started [progress] itself (a TLS connection, from its accept).
*)

val closed_as_asked : t -> bool
(** After {!Server_closed}: whether the connection ended because its last
    request asked for it ([Connection: close], or HTTP/1.0 without keep-alive),
    with that request's body read to its end and no byte read past it. Such a
    client sends nothing more (RFC 9112 §9.6: it must not send another request
    on the connection), so the caller may close without the lingering close that
    protects the last response from a reset, unless bytes already wait unread in
    the socket. [false] for every other ending. *)
