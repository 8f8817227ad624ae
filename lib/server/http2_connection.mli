(** One HTTP/2 connection (RFC 9113), from the client's preface to its end: the
    frames read in the connection's fiber, each request stream served by a fiber
    of its own on the connection's switch, running the application's handler
    through the same {!Dispatch} as HTTP/1.1 (routes, middleware, services,
    error pages, static files), and one writer fiber that sends the frames every
    fiber makes. Part of the pipeline ({!Pipeline}), which hands a connection
    over when its first bytes are the preface. Internal.

    What it keeps to:
    - SETTINGS from [config.http2] (streams, stream window, frame size, header
      list size), the connection window raised by a WINDOW_UPDATE at once; the
      client's SETTINGS acknowledged as soon as applied;
    - flow control both ways: a request body is given back to the client's
      windows as the handler reads it (half a window at a time), so a stream
      buffers at most its window and the connection at most its own; a response
      waits for the client's windows, suspending only its stream's fiber, at
      most [timeouts.send] per wait (then the stream is reset), and past 128 KiB
      of unwritten output for its turn (the writer lets one stream go per
      write);
    - a stream reset by the client cancels its fiber; one the server finishes
      answering before the client finishes its body is ended with RST_STREAM
      NO_ERROR; PRIORITY frames and RFC 9218 priorities are parsed and ignored;
    - request checks of RFC 9113 §8: pseudo-header fields, connection-specific
      fields, [te], [content-length] against the DATA received;
    - the abuse limits of {!Config.http2}: concurrent streams (counted until
      their fibers end), field block size and CONTINUATION count (each its own
      GOAWAY ENHANCE_YOUR_CALM), a field block complete within
      [timeouts.request_header] of its HEADERS, header list size (answered
      [431]), control frame and reset budgets;
    - [timeouts.keep_alive] while no stream is open (then GOAWAY), a drain
      ({!Progress.t.draining}) answered with GOAWAY NO_ERROR once the streams in
      flight finish.

    A file response is read into DATA frames: sendfile(2) cannot send bytes that
    must be framed (and, over TLS, encrypted). It is read in the stream's fiber,
    on the loop's domain, by [preadv2] at the response's offsets (no seek: a
    descriptor shared by streams is safe) straight into the frames' payloads:
    with the runtime lock kept for what the page cache holds, released for what
    must come from the disk, which blocks the loop (as sendfile(2) does for
    HTTP/1.1) but neither the domain's other threads nor the other domains'
    collections. *)

type ending =
  | Peer_gone  (** The client closed the connection. *)
  | Ended_by_server
      (** After a GOAWAY: drain, idle timeout, or a connection error. The caller
          closes gracefully (lingers). *)

val serve : Pipeline_state.t -> ending
(** [serve c] serves the connection whose input ([c.input]) starts with the
    client preface, which it consumes; writes go through [c.upgraded_write].
    Blocks the calling fiber (the connection's) until the connection ends; its
    stream and writer fibers end before it returns. A failed read or write
    raises as the pipeline's do ([Unwind.Io_failed] or the transport's
    exception).
    @raise Braid.Cancelled
      if the fiber is cancelled (the sweeper's send timeout, a shutdown): the
      streams are cancelled with it. *)
