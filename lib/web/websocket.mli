(** WebSocket (RFC 6455), server side: the handshake, then messages in direct
    style.

    {[
      let echo request =
        Websocket.accept request (fun ws ->
            let rec loop () =
              match Websocket.receive ws with
              | `Text s ->
                  Websocket.send_text ws s;
                  loop ()
              | `Binary s ->
                  Websocket.send_binary ws s;
                  loop ()
              | `Close _ -> ()
            in
            loop ())

      let router = Router.empty |> Router.add GET "/echo" echo
    ]}

    {b Threads.} A connection belongs to the event loop (the domain) that
    accepted it. One fiber at a time may {!receive}; any fiber of that loop may
    send, concurrently with the receiver and with other senders: each frame is
    written whole under a lock ({!Braid_sync.Mutex}), so frames never
    interleave. Sending from another domain raises [Invalid_argument]: to reach
    a connection from elsewhere (a chat room's other members), publish on a
    {!Hub} and {!Hub.forward} it to the connection, which sends from a fiber of
    the connection's own loop. Every function blocks only the calling fiber:
    {!receive} until a message arrives, the senders while the socket is full.
    {!abort} alone may be called from any domain, and never blocks.

    {b What is checked} (a client's frame that breaks a rule fails the
    connection: a close frame with the code goes out, {!receive} returns
    [`Close (code, reason)] and the application should return):
    - every client frame is masked, no reserved bit is set, its opcode is known,
      a control frame is at most 125 bytes and not fragmented, fragments follow
      the rules: else [1002] (protocol error);
    - a text message (across its fragments, checked as they arrive) and a close
      reason are UTF-8: else [1007];
    - a frame is at most [limits.max_frame] bytes, a message (its fragments
      together) at most [limits.max_message]: else [1009];
    - a close frame carries a code a peer may send: else [1002].

    {b Closing.} A close frame from the client is answered with the same code,
    and {!receive} returns [`Close (code, reason)] (code [1005] if it had none);
    when the callback returns, the server closes the TCP connection. {!close}
    sends a close frame; a fiber still receiving then drops messages until the
    client's close frame arrives. When the callback of {!accept} returns without
    a close, the server sends [1000]; when it raises, [1011] (the exception is
    logged). No byte from the client for [limits.idle_timeout] seconds: close
    [1001] ("idle timeout"). A graceful shutdown of the server: close [1001]
    ("server shutting down") at the next {!receive}, blocked or not. The
    connection ending without a close frame (a reset, end of stream):
    [`Close (1006, "")], nothing sent.

    {b Limits and the server.} The connection counts against the server's
    [max_connections] while it lives; it is never closed as idle to admit
    another; the send timeout applies to each write (a client that stops reading
    is cut off: the blocked sender gets {!Braid.Cancelled}; {!abort} drops it
    sooner); no handler timeout applies after the handshake. *)

type t
(** An open WebSocket connection. *)

type limits = {
  max_frame : int;  (** Bytes of one frame's payload; at least 125. *)
  max_message : int;
      (** Bytes of a message, fragments together; also the most {!send_text} and
          {!send_binary} accept. *)
  idle_timeout : float option;
      (** Seconds without a byte from the client before closing with [1001];
          [None]: no limit. A client that sends pings (Python's [websockets]
          does every 20 s) is never idle. *)
}

val default_limits : limits
(** 1 MiB frames, 1 MiB messages, 60 s idle. *)

type message = [ `Text of string | `Binary of string | `Close of int * string ]

exception Closed
(** Raised by the senders once a close frame was sent (by {!close}, by an answer
    to the client's close, by a failed connection) or a write failed. Escaping
    the callback of {!accept}, it ends the connection quietly. *)

(** The pages that may open a WebSocket, by the [Origin] a browser sends with
    the handshake. Browsers let a page of any site open a WebSocket to any
    server, with the user's cookies: without this check, a page elsewhere could
    act as the logged-in user (cross-site WebSocket hijacking). A handshake
    without [Origin] (a client that is not a browser) is always accepted. *)
type origins =
  | Same_origin
      (** The default: an [Origin] whose host and port are those of the
          request's [Host] (a port left out is its scheme's default: [80] for
          [http], [443] for [https]). Behind a proxy that rewrites [Host], name
          the public origins with [Only]. *)
  | Any  (** Any origin: for a public API that reads no cookie. *)
  | Only of string list
      (** These serialised origins (["https://app.example.com"],
          case-insensitively, no trailing slash), and no other. *)

val accept :
  ?limits:limits ->
  ?protocols:(string list -> string option) ->
  ?headers:(string * string) list ->
  ?origins:origins ->
  Handler.request ->
  (t -> unit) ->
  Response.t
(** [accept request f] is the handler's response to a WebSocket handshake: a
    [101] with [Sec-WebSocket-Accept] after which [f] runs with the connection
    ({!Response.upgrade}), or, if [request] is no valid handshake, an error: a
    [400] for a method other than GET, an HTTP/1.0 request or a missing or
    malformed [Sec-WebSocket-Key] (not 16 bytes in base64); a [426] with
    [Upgrade: websocket] for a request that does not ask for an upgrade to
    WebSocket; a [426] with [Sec-WebSocket-Version: 13] for another version; a
    [403] for a valid handshake whose [Origin] [origins] (default [Same_origin])
    does not allow, or with several [Origin] fields.

    [protocols offered] (called only when the client offers subprotocols in
    [Sec-WebSocket-Protocol], in its order of preference) chooses one, or [None]
    (the default: none chosen). [headers] are added to the [101].

    Raises [Invalid_argument] if [protocols] returns a subprotocol the client
    did not offer (the handler's mistake: a [500]). *)

val receive : t -> message
(** [receive t] is the next message: a text (valid UTF-8) or binary message,
    fragments joined, or [`Close (code, reason)] once the connection closes (see
    above), and from then on. Pings are answered (a pong with the same payload)
    and pongs dropped, inside. Blocks the fiber until a message or the close.

    Raises [Invalid_argument] if another fiber is in [receive].
    @raise Braid.Cancelled if the fiber is cancelled. *)

val until_closed : t -> int * string
(** [until_closed t] receives and drops every message until the connection
    closes, and is the close's code and reason: the receiving side of a
    connection the server only pushes to (with {!Hub.forward}). Blocks and
    raises as {!receive}. *)

val send_text : t -> string -> unit
(** [send_text t s] sends [s] as one text frame.

    Raises [Invalid_argument] if [s] is not UTF-8 or longer than
    [limits.max_message], or on another domain; {!Closed} after a close.
    @raise Braid.Cancelled
      if the fiber is cancelled, or the send timeout expired, while it waits for
      the lock or the socket (the connection can send nothing more). *)

val send_binary : t -> string -> unit
(** [send_binary t s] sends [s] as one binary frame; as {!send_text}. *)

val ping : ?payload:string -> t -> unit
(** [ping t] sends a ping ([payload] at most 125 bytes, default empty); the
    client's pong is dropped by {!receive}. As {!send_text}. *)

val close : ?code:int -> ?reason:string -> t -> unit
(** [close t] sends a close frame with [code] (default [1000]) and [reason]
    (default empty), unless one was sent. It does not wait for the client's
    answer: a fiber receiving sees it; or return from the callback, and the
    server closes the connection.

    Raises [Invalid_argument] if [code] is not one an endpoint may send
    (1000-1003, 1007-1014, 3000-4999) or [reason] is over 123 bytes or not
    UTF-8, or on another domain.
    @raise Braid.Cancelled as {!send_text}. *)

val abort : ?code:int -> ?reason:string -> t -> unit
(** [abort t] drops a peer that cannot keep up, at once: for a server that
    queues messages for a client and finds the queue full (a chat room's member
    that stopped reading, [examples/chat]), without waiting for a write blocked
    on the client's full socket, which only the send timeout would otherwise
    end. Never blocks; any fiber of any domain (it sets an atomic and cancels
    scopes, see {!Braid.Fiber.Scope}).

    From then on:
    - a sender blocked in a write is interrupted and raises {!Closed}; the frame
      it was writing is cut short, so nothing more can be sent on the
      connection, not even a close frame; later sends raise {!Closed};
    - {!receive}, blocked or at its next call, returns [`Close (code, reason)]
      (and from then on). Before returning it, unless a frame was cut, it sends
      the close frame with [code] (default [1008], policy violation; [1013], try
      again later, suits a slow client) and [reason] (default empty): a write
      like any other, which the socket takes at once unless the client stopped
      reading, bounded by the send timeout. The application should then return
      from the callback of {!accept}, and the server closes the TCP connection.

    A second call does nothing.

    Raises [Invalid_argument] on a [code] or [reason] that {!close} refuses. *)

val protocol : t -> string option
(** The subprotocol chosen at the handshake. *)

val peer : t -> Unix.sockaddr option
(** The client's address. *)

val of_upgraded : ?limits:limits -> ?protocol:string -> Upgraded.t -> t
(** [of_upgraded up] speaks WebSocket (the server's side) over a connection
    whose handshake is done: what {!accept} does after the [101]. For tests and
    for a handshake of one's own. The idle timeout needs the server's services
    ({!Services.run}).

    Raises [Invalid_argument] if [limits.max_frame < 125] or
    [limits.max_message < 1]. *)
