(** An HTTP/1.1 client on Braid's event loops: plain and TLS connections kept
    alive in a pool per origin, request and response bodies streamed both ways,
    redirects by policy, and timeouts for each phase.

    {[
      let fetch () =
        Braid_io.run @@ fun () ->
        Braid.Switch.run @@ fun sw ->
        let client = Braid_client.create ~sw () in
        match Braid_client.get client "http://127.0.0.1:8080/hello" with
        | Ok r -> Printf.printf "%d: %s\n" r.status r.body
        | Error e -> prerr_endline (Braid_client.Error.to_string e)
    ]}

    {b Where it runs.} A client is one value for the whole program: any fiber of
    any {!Braid_io} event loop, on any domain, may use it at the same time. What
    is per loop is the pool: a connection is a socket of the loop whose fiber
    opened it, so each loop keeps its own idle connections and its own count of
    connections in use per origin ({!config.max_connections}), and a fiber only
    ever reuses its own loop's connections. A pool task (a [Braid_pool] domain,
    no event loop) may call {!request} and {!get}: each call then runs a
    short-lived event loop on the task's domain, blocking that domain (not only
    a fiber) until the exchange ends, on a connection of its own that is closed
    afterwards (no keep-alive).

    {b Errors} the network or the peer cause are values ({!Error.t}). Misuse
    raises [Invalid_argument]. Cancellation of the calling fiber raises
    {!Braid.Cancelled} from whichever call is blocked; the connection in use is
    closed, never returned to the pool half-read, and its slot is given back.

    {b Security defaults.} [https] URLs verify the server's certificate chain
    against the system's trusted certificates and its name against the URL's
    host (sent as SNI), unless {!config.tls} says otherwise. Redirects never go
    from [https] to [http], and credentials ([Authorization], [Cookie]) are not
    sent to another origin than the one they were given for.

    Compared with others: Go's [net/http] [Client] (a pool per host, idle
    timeout, redirect policy), cohttp-eio's client (a switch owns the
    connections). HTTP/2 is not spoken yet. *)

module Url = Url

(** {1 Errors} *)

module Error : sig
  type phase =
    | Connect  (** Resolving, connecting and the TLS handshake. *)
    | First_byte
        (** From the end of the request to the end of the response head. *)
    | Read  (** Waiting for the next bytes of the response body. *)
    | Whole_request  (** The whole exchange, redirects included. *)

  type t =
    | Bad_url of string
        (** A URL or [Location] that {!Url.of_string} refuses. *)
    | Bad_request of string
        (** A header field whose name is not a token or whose value holds a CR,
            LF, NUL or another control (request splitting). *)
    | Unknown_host of string  (** The name resolved to no address. *)
    | Connect_failed of string
        (** No address could be reached: the socket error, as
            {!Braid_io.error_message} words it. *)
    | Tls_failed of string
        (** The handshake failed: a certificate that does not verify or does not
            name the host, no shared protocol; OpenSSL's reason. *)
    | Timeout of phase
    | Connection_lost of string
        (** The connection failed or closed before the response was whole. *)
    | Bad_response of Braid_http.Parse_error.t
        (** The server's response is malformed or beyond the limits
            ({!Braid_http.Response_parser}). *)
    | Too_many_redirects of int

  val to_string : t -> string
  val pp : Format.formatter -> t -> unit

  val nothing_sent : t -> bool
  (** [nothing_sent e] is [true] when the server cannot have seen the request
      ([Bad_url], [Bad_request], [Unknown_host], [Connect_failed], [Tls_failed],
      [Timeout Connect]): any request may be retried elsewhere. *)
end

(** {1 Configuration} *)

type redirects =
  | Never  (** 3xx responses are returned as they are. *)
  | Follow of int
      (** Follow at most that many: [301], [302] and [303] with [GET] (or
          [HEAD]) and no body; [307] and [308] with the same method and body
          when the body can be sent again ({!Body.string}); else the 3xx is
          returned. Never from [https] to [http]. *)

type config = {
  connect_timeout : float;  (** Seconds (default 10). *)
  first_byte_timeout : float option;  (** Default [Some 30.]. *)
  read_timeout : float option;
      (** Longest wait for the next bytes of a body (default [Some 30.]). *)
  request_timeout : float option;
      (** The whole exchange, reading the body included (default [None]). *)
  max_connections : int;
      (** Per origin and per loop: connections in use at once (default 64); more
          requests wait for one to come back. *)
  max_idle : int;  (** Per origin and per loop, kept for reuse (default 16). *)
  idle_timeout : float;
      (** An idle connection older than this is not reused (default 30). *)
  redirects : redirects;  (** Default [Follow 5]. *)
  limits : Braid_http.Limits.t;
      (** For responses: [max_request_line] bounds the status line, the header
          bounds apply as they do to requests, [max_body] bounds a body read
          ({!Response.to_string} has its own [max]). Default: the request
          side's, with [max_body = max_int] (bodies are streamed). *)
  tls : Braid_tls.Client_context.t option;
      (** [None] (the default): verification on, against the system's trusted
          certificates, loaded once at the first [https] request. *)
}

val default_config : config

(** {1 Bodies} *)

module Body : sig
  type t

  val empty : t

  val string : string -> t
  (** [string s] is sent with [Content-Length]; it can be sent again (a retry on
      a fresh connection, a [307] or [308]). *)

  val stream : ?length:int -> ((bytes -> int -> int -> unit) -> unit) -> t
  (** [stream ~length produce] calls [produce write] once, in the calling fiber,
      when the request is sent; each [write buf off len] sends those bytes
      (blocking this fiber while the socket is full). With [length], sent with
      [Content-Length] (producing another number of bytes closes the connection
      and is [Error (Connection_lost _)]); without, chunked. Not retried nor
      resent on a redirect. *)
end

(** {1 Responses} *)

(** A connection whose protocol switched after a [101] ({!Response.switch}): raw
    bytes both ways, TLS included for [https]. It belongs to the loop of the
    fiber that sent the request: use it from that loop's fibers, one reading and
    one writing at a time. Each function blocks only the calling fiber; no
    timeout applies (wrap the calls in [Braid_io.Time.timeout] if one should). A
    cancelled fiber raises {!Braid.Cancelled} from the blocked call, the
    connection left open: {!Switched.close} it. *)
module Switched : sig
  type t

  val read : t -> bytes -> int -> int -> int
  (** [read t buf off len] reads at most [len] bytes, at least one, [0] at the
      end of the stream; the bytes the server sent right after its [101] come
      first.

      Raises [Invalid_argument] if [len <= 0] or the range is not in [buf], and
      [Braid_io.Io_error] if the connection fails. *)

  val write : t -> string -> unit
  (** [write t s] sends all of [s]. Raises [Braid_io.Io_error] if the connection
      fails. *)

  val write_bytes : t -> bytes -> int -> int -> unit

  val close : t -> unit
  (** [close t] closes the connection (TLS: a close_notify, not waited for).
      Idempotent; never blocks. Else the client's switch closes it when it
      finishes. *)
end

module Response : sig
  type t

  val status : t -> int
  val headers : t -> Braid_http.Headers.t
  val header : t -> string -> string option
  val head : t -> Braid_http.Response_head.t

  val url : t -> Url.t
  (** The URL that answered, after redirects. *)

  val read : t -> bytes -> int -> int -> (int, Error.t) result
  (** [read t buf off len] reads up to [len] bytes of the body, [Ok 0] at its
      end, blocking this fiber (at most {!config.read_timeout} between bytes).
      Once the body is read to its end, the connection goes back to the pool (or
      is closed if either side said [close]).

      Raises [Invalid_argument] if [len <= 0], the range is not in [buf], or [t]
      was closed. *)

  val pipe :
    ?flush:(unit -> unit) ->
    t ->
    (bytes -> int -> int -> unit) ->
    (unit, Error.t) result
  (** [pipe t write] passes the rest of the body to [write buf off len], piece
      by piece, until its end, then gives the connection back as {!read} does:
      for relaying a body elsewhere. [flush] (default: nothing) is called before
      [pipe] waits for the server having written since its last call: a [write]
      that buffers (a server's response writer) then sends what it holds rather
      than keep it while the server is slow (a stream of events). The bytes are
      valid only during the call. Each piece is as large as what has arrived (up
      to 64 KiB): a body of known length is read into a buffer the loop reuses
      (none allocated per response), bytes that came with the head are passed
      from where they lie, and what can be read without waiting is gathered
      before [write] is called, never held back waiting for more. Blocks the
      calling fiber (at most {!config.read_timeout} between bytes) and in
      [write]. An exception from [write] leaves [t] open: {!close} it.

      Raises [Invalid_argument] if [t] was closed or switched. *)

  val to_string : ?max:int -> t -> (string, Error.t) result
  (** [to_string ~max t] reads the rest of the body; a body above [max] bytes
      (default 16 MiB) is [Error (Bad_response _)] and the connection closes. *)

  val trailers : t -> Braid_http.Headers.t
  (** A chunked body's trailer fields, once read to the end. *)

  val close : t -> unit
  (** [close t] is done with [t]: if its body was read to the end, nothing to
      do; else the connection is closed (not drained). Idempotent; never blocks.
  *)

  val switch : t -> Switched.t
  (** [switch t] takes the connection of a [101 Switching Protocols] answer to
      {!send}'s [upgrade]: it leaves the pool (its slot is free at once) and is
      the caller's to {!Switched.close}. {!close} on [t] then does nothing.

      Raises [Invalid_argument] if [t]'s status is not [101], or it was closed
      or switched already. *)
end

(** {1 Clients} *)

type t

val create : sw:Braid.Switch.t -> ?config:config -> unit -> t
(** [create ~sw ()] is a client whose connections belong to [sw]: they are
    closed when it finishes (and each as soon as it is no longer wanted). Any
    thread, any domain; creates no connection yet.

    Raises [Invalid_argument] if [config.max_connections < 1]. *)

val send :
  t ->
  ?headers:(string * string) list ->
  ?body:Body.t ->
  ?upgrade:string ->
  Braid_http.Method.t ->
  string ->
  (Response.t, Error.t) result
(** [send t meth url] sends a request and returns the response as soon as its
    head is read (interim [1xx] skipped), following redirects as
    {!config.redirects} says. The caller then reads the body ({!Response.read},
    {!Response.to_string}) or {!Response.close}s it: until then the connection
    is held.

    [headers] go out as given (in order, after [Host], which they may replace);
    framing fields ([Content-Length], [Transfer-Encoding], [Connection],
    [Keep-Alive], [TE], [Upgrade]) are set by the client from [body], and given
    ones are dropped. A request that fails on a reused connection before any
    byte of the response (the server had closed it) is sent once more on a fresh
    one, if its body can be sent again.

    With [upgrade] (an [Upgrade] field value, such as ["websocket"]), the
    request asks the server to switch protocols ([Upgrade] and
    [Connection: Upgrade] are sent): a [101] answer is then returned, its
    connection for {!Response.switch} to take (or {!Response.close} to close).
    Without it, a [101] is [Error (Bad_response _)]. An [upgrade] that is not a
    field value is [Error (Bad_request _)].

    Blocks the calling fiber; from a fiber of a {!Braid_io} loop.

    Raises [Invalid_argument] outside a fiber of a {!Braid_io} loop.
    @raise Braid.Cancelled if the fiber is cancelled (connection closed). *)

val send_url :
  t ->
  ?headers:(string * string) list ->
  ?body:Body.t ->
  ?upgrade:string ->
  Braid_http.Method.t ->
  Url.t ->
  (Response.t, Error.t) result
(** [send_url] is {!send} with a URL already parsed ({!Url.with_target} makes
    one per target from a parsed origin). *)

val request :
  t ->
  ?headers:(string * string) list ->
  ?body:Body.t ->
  Braid_http.Method.t ->
  string ->
  (Response.t -> 'a) ->
  ('a, Error.t) result
(** [request t meth url f] is [f response] for the response {!send} gets, after
    which the response is closed (returned to the pool if [f] read its body to
    the end). From a loop's fiber or a pool task (see above).
    @raise Braid.Cancelled if the fiber is cancelled. *)

type whole = { status : int; headers : Braid_http.Headers.t; body : string }

val get :
  t -> ?headers:(string * string) list -> string -> (whole, Error.t) result
(** [get t url] is a [GET] with the body read whole (at most 16 MiB). *)

val close_idle : t -> unit
(** [close_idle t] closes the calling loop's idle connections. *)
