(** The server's configuration: an immutable value.

    Each connection captures the configuration current when it is accepted and
    keeps it for its whole life; the accept loop reads the current value at each
    accept ({!Server.set_config}), so a reload swaps what new connections see
    without touching those in progress. Limits and timeouts live here for that
    reason.

    The address, the number of event loops and the log paths live here too, so
    that one value describes a whole server (what [braid serve] computes from
    its defaults, its configuration file and its flags), but they apply only
    when the server starts: the first two are read by {!Server.create}, the log
    paths by whoever creates the {!Log_writer}. *)

val max_seconds : float
(** The longest duration any setting accepts: 31,536,000 s (365 days). Every
    timeout must be positive and at most this, the linger time too but it may be
    0: long enough for any use, short enough that no computation on it in
    nanoseconds can overflow. *)

type timeouts = {
  request_header : float;
      (** Seconds a client has to send a complete request head, from the moment
          the server starts waiting for it (the first request of a connection)
          or from the request's first byte (later requests). It bounds the whole
          head, not each read: a client trickling a byte at a time is cut off
          too. A client that stalls (slowloris) is closed, with [408] if it had
          sent part of a request. *)
  keep_alive : float;
      (** Seconds an idle keep-alive connection may wait, from the end of a
          response, for the first byte of its next request before the server
          closes it silently. *)
  body : float;
      (** Seconds each read of a request body may wait for data; a stalled
          upload ends the connection ([408] if no response was started). *)
  send : float;
      (** Seconds a response may wait for the client to take its next 64 KiB
          (256 KiB of a file sent with sendfile) (its receive window full): a
          client that stops reading is closed within two sweeps of the deadline,
          its connection slot freed. *)
  handler : float option;
      (** Seconds a handler may run before its request is answered with [503]
          and [Connection: close] and the handler is cancelled (its blocking
          calls raise {!Braid.Cancelled}; code that never blocks cannot be
          interrupted), with the [Braid_pool] tasks it submitted (at their
          blocking calls, such as awaiting their subtasks). It bounds computing
          the response (the global middleware and the static files' lookups
          included), not streaming its body. [None]: no limit. *)
}
(** Timeouts, all in seconds and positive. *)

type tls = {
  address : Unix.sockaddr;
      (** Where HTTPS is served, beside the plain listener ({!t.listen}); port 0
          lets the kernel choose. Read by {!Server.create} only, as {!t.listen}.
      *)
  certificates : Braid_tls.Server_context.certificate list;
      (** The certificates presented, the default first; the others are chosen
          by SNI (see {!Braid_tls}). Read again by every {!Server.set_config} (a
          reload): new connections get the new ones, connections in progress
          keep theirs, and files that fail to load leave the old ones in force.
      *)
  redirect : bool;
      (** The plain listener answers every request with [308 Permanent Redirect]
          to the same path over HTTPS (the metrics and health paths excepted).
      *)
}
(** HTTPS: TLS 1.2 and 1.3, ALPN [http/1.1], session tickets. The handshake must
    finish within [timeouts.request_header], like a request head. *)

type http2 = {
  enabled : bool;
      (** Served over TLS to clients choosing [h2] by ALPN (offered before
          [http/1.1]), and in cleartext (h2c) to clients that open a plain
          connection with the HTTP/2 preface ("prior knowledge"). [false]: ALPN
          offers [http/1.1] only and a preface is answered as HTTP/1.1 would
          answer it (an error). Read by {!Server.create} for ALPN, and at each
          connection for h2c. *)
  max_concurrent_streams : int;
      (** SETTINGS_MAX_CONCURRENT_STREAMS: streams a client may have open at
          once. A stream counts until its handler's fiber ends, even after the
          client reset it, so resets cannot run more handlers than this. A
          stream past it is refused (RST_STREAM REFUSED_STREAM). *)
  stream_window : int;
      (** SETTINGS_INITIAL_WINDOW_SIZE: bytes of request body a stream may send
          ahead of its handler's reads; at most 2{^ 31}-1. *)
  connection_window : int;
      (** The same for the whole connection (announced with a WINDOW_UPDATE):
          bounds the request bodies a connection buffers. *)
  max_frame_size : int;  (** SETTINGS_MAX_FRAME_SIZE: 16,384 to 16,777,215. *)
  max_header_list_size : int;
      (** SETTINGS_MAX_HEADER_LIST_SIZE: a request whose header list (HPACK's
          accounting) is larger is answered [431]; a field block whose encoded
          size, CONTINUATIONs included, passes it ends the connection
          (ENHANCE_YOUR_CALM), as does a block in more than 64 frames. *)
  control_frame_budget : int;
      (** Frames that cost the server work but ask for no response (SETTINGS,
          PING, WINDOW_UPDATE, PRIORITY, empty DATA, unknown types) a connection
          may send beyond what its requests earn: each costs a token, each
          request and each DATA frame the server sends earns some back, and a
          tenth of the budget comes back each second. A connection that spends
          it all gets GOAWAY ENHANCE_YOUR_CALM (floods of SETTINGS, PING or
          WINDOW_UPDATE). *)
  reset_budget : int;
      (** Streams a client may reset (RST_STREAM) before their response is
          complete, beyond those that complete: each reset costs a token, each
          completed stream earns one, a tenth comes back each second. Spending
          it all gets GOAWAY ENHANCE_YOUR_CALM (the rapid reset attack,
          CVE-2023-44487). *)
}
(** HTTP/2 (RFC 9113): whether it is served, and the limits each connection
    announces in its SETTINGS or keeps against abuse. *)

val default_http2 : http2
(** Enabled; 100 streams, a 256 KiB stream window and a 1 MiB connection window,
    16 KiB frames, 64 KiB header lists, budgets of 1,000 control frames and 200
    resets. *)

(** The cap on the connections one client address may hold at once.

    Why on by default: the connection limit is shared, and connections a client
    holds open (WebSockets, which are never closed as idle to admit another)
    could otherwise take every slot from one address and lock every other client
    out (issue 39: 1,000 WebSockets against the default [max_connections] of
    1,000). Why 256: a browser never holds that many to one server (HTTP/1.1: 6
    per host; Chrome's whole socket pool is 256, Firefox's WebSockets at most
    200), so a person is never refused, while one address can no longer hold
    more than a quarter of the default limit.

    Why loopback is exempt from the default: a peer on the server's own host is
    the operator's (a reverse proxy or TLS terminator in front, as haproxy in
    [examples/cluster]; a benchmark such as [wrk -c10000]; the tests), and every
    client behind a proxy arrives from its one address: capping it would cap
    them all together.

    What it cannot tell: an address is not a person. Many users behind one NAT
    (carrier-grade NAT, a corporate proxy) share one, and so do all clients of a
    load balancer on another host: behind such a proxy set [No_cap] (the
    configuration file's [MaxConnectionsPerClient off]); a server whose clients
    come through a big NAT may want a larger [Cap]. *)
type per_client =
  | No_cap
  | Cap of int  (** At most this many from every address, loopback included. *)
  | Cap_except_loopback of int
      (** At most this many from every address but the loopback ones
          (127.0.0.0/8, [::1], [::ffff:127.0.0.0/104]): the default, with 256.
      *)

val client_cap : per_client -> Unix.sockaddr -> int option
(** [client_cap p peer] is the cap that applies to a connection from [peer],
    [None] for none (a Unix-domain peer has none). *)

type t = {
  limits : Braid_http.Limits.t;
      (** Request line, header section and body limits. [limits.max_body] is the
          body limit of every request whose route sets none
          ({!Braid_web.Router.add}'s [max_body], lower or higher, replaces it).
      *)
  root : string option;
      (** The document root for static files, as an absolute path without
          symbolic links ({!Server} canonicalises it); [None] serves no files.
      *)
  index : string;  (** The file served for a directory: ["index.html"]. *)
  precompressed : bool;
      (** Serve [FILE.br] or [FILE.gz], when present beside [FILE] and accepted
          by the client, instead of [FILE] (docs/server.md, "Precompressed
          variants"). Off by default: a stale variant would be served as the
          file. *)
  metrics_path : string option;
      (** Where GET answers the server's {!Metrics} in the Prometheus text
          format; [None] (the default): nowhere. An {!endpoint_path}. *)
  metrics_allow : Unix.inet_addr list;
      (** The client addresses the metrics path answers; others get 403. Empty
          (the default): loopback addresses only. *)
  health_path : string option;
      (** Where GET answers 200 ["ok"] while the server serves and 503
          ["draining"] once it shuts down, for a load balancer's checks; [None]
          (the default): nowhere. An {!endpoint_path}. *)
  body_buffer : int;
      (** Bytes of a request body that a whole-body read
          ({!Braid_web.Body.to_string}) keeps in memory while the body arrives;
          beyond, what arrived is spooled to an unlinked temporary file in
          [body_temp_dir] and read back once complete. So a connection uploading
          holds at most this much, however large its body: 900 slow uploads of 1
          MB hold 900 x 64 KiB, not 900 MB. [0] spools every body. *)
  body_temp_dir : string;
      (** Where spooled bodies go (an existing directory). The files are
          unlinked as soon as they are created: nothing is left behind. *)
  spool_budget : int option;
      (** Bytes of spooled bodies the whole server holds at once
          ({!Braid_web.Spool_budget}): a body whose next piece does not fit is
          answered [503] with [Retry-After] (or [413] if it alone is larger than
          the budget), its connection closed. [Some 0]: no body is spooled, one
          longer than [body_buffer] gets [413]. [None] (the default): derived at
          start and at each reload from the free space of [body_temp_dir]: a
          quarter of it, at most 1 GiB ({!Spool_limit.limit_for}). *)
  input_buffer : int;
      (** Initial size of a connection's input buffer, in bytes. It grows only
          for longer request heads (bounded by [limits]). *)
  output_buffer : int;
      (** Size of a connection's output buffer: a response whose head and body
          fit is sent with one write. *)
  linger : float;
      (** When the server closes a connection, it stops sending and discards
          what the client still sends for at most this many seconds (and 1 MiB),
          so its last response is not destroyed by a reset. *)
  timeouts : timeouts;
  max_connections : int;
      (** Connections served at once by the whole server (all domains). At the
          limit, a new connection is admitted only by closing one that has
          waited at least a second for a request: the one idle longest of those
          that never sent a request, a keep-alive one only while none of those
          waits; if none can be closed, it waits (accepted, the next ones in the
          kernel's backlog) until a connection closes. A connection in a
          request, or between two requests of a client using it, is never closed
          to make room, so a client holding exactly this many keep-alive
          connections sees no error. Read at each accept, so a reload changes it
          for later accepts. The default is derived from the descriptor limit,
          see {!connections_for_descriptors}. *)
  max_connections_per_client : per_client;
      (** At most this many connections at once from one client address
          ({!client_cap}); a further one is answered [503] and closed at once.
          Default: [Cap_except_loopback 256]. Read at each accept. *)
  minor_heap_words : int;
      (** The least minor heap of each event loop's domain, in words (OCaml's
          own default is 256 Ki words; [OCAMLRUNPARAM=s=...] can set more). With
          many connections each suspended between requests, a small minor heap
          makes every minor collection promote and scan the state of each one
          that ran since the last: at 1,000 keep-alive connections, 256 Ki words
          cost 17,500 user-space instructions per request and 1 Mi words 14,000
          (10 connections: 11,600 either way). Read by {!Server.run}. *)
  listen : Unix.sockaddr;
      (** The address the server listens on; port 0 lets the kernel choose. Read
          by {!Server.create}: {!Server.set_config} ignores it (a new address
          needs a restart). *)
  domains : int;
      (** Event loops, one per domain, each accepting on its own socket bound
          with [SO_REUSEPORT] when there are several; at least 1. Read by
          {!Server.create}: {!Server.set_config} ignores it. *)
  io_backend : Braid_io.backend option;
      (** What the event loops wait in ({!Braid_io.type-backend}): [None] takes
          [BRAID_IO_BACKEND]'s, else epoll. io_uring refused by the kernel falls
          back to epoll with one line on standard error. Read by
          {!Server.create}, like [domains]: {!Server.set_config} ignores it. *)
  access_log : string option;
      (** Where the access log goes (a path); [None]: no access log. The server
          does not open it: it is for whoever creates the {!Log_writer}. *)
  error_log : string option;
      (** Where messages go (a path); [None]: standard error. For whoever
          creates the {!Log_writer}, as [access_log]. *)
  tls : tls option;  (** HTTPS beside plain HTTP; [None]: plain HTTP only. *)
  http2 : http2;  (** HTTP/2 over TLS and h2c, {!default_http2}. *)
}

val connections_for_descriptors : int -> int
(** [connections_for_descriptors n] is the connection limit for a process
    allowed [n] open descriptors: [max 1 (n * 9 / 10 - 64)] ([n] taken as at
    most 1,048,576), leaving room for what else a server holds open (listeners,
    the files being sent, logs, the event loops' own, and the one connection
    accepted past the limit while room is made for it). The one rule for the
    default limit: {!default} applies it to the soft limit in force when the
    program starts; [braid serve] first raises the soft limit to the hard one
    ({!Server.raise_descriptor_limit}) and applies it again. *)

val default : t
(** {!Braid_http.Limits.default}, no root, ["index.html"], no precompressed
    variants, 64 KiB of body in memory and spooled bodies in
    [Filename.get_temp_dir_name ()] within a budget derived from its free space,
    4 KiB input and 16 KiB output buffers, 2 s of lingering, timeouts of 20 s
    for a request head, 5 s between keep-alive requests, 60 s per body read and
    per response write, no handler timeout, [connections_for_descriptors] of the
    descriptor soft limit at start (857 for the common 1,024; 1,000 if the limit
    cannot be read), listening on 127.0.0.1:8080 with one event loop, no access
    log and messages to standard error, no HTTPS. *)

val endpoint_path : string -> bool
(** [endpoint_path p]: whether [p] may be a metrics or health path: it starts
    with ["/"], is longer than ["/"] (which would hide the whole site) and has
    no query. The path is compared with a request's target as sent, so anything
    else would never be answered. *)

val development_tls :
  ?dir:string ->
  Unix.sockaddr ->
  (tls * Braid_tls.Dev_certificate.t, string) result
(** [development_tls address] is HTTPS on [address] with a development
    certificate ({!Braid_tls.Dev_certificate.ensure} in [dir], default
    {!Braid_tls.Dev_certificate.default_directory}: made on first use, for
    [localhost], [127.0.0.1] and [::1]), without redirect, and the certificate,
    whose [certificate] file a client must trust. For development only, as
    [braid serve --dev]. Blocks the domain while a certificate is made (a few
    milliseconds); call it before the server runs. [Error] if [dir] cannot be
    written. *)
