(** A reverse proxy as a {!Braid_web} handler: requests under a path prefix are
    forwarded to one of several upstream HTTP servers, through a {!Braid_client}
    whose keep-alive pools hold the upstream connections.

    {[
      let routes ~sw =
        let client =
          Braid_client.create ~sw ~config:Braid_proxy.client_config ()
        in
        match
          Braid_proxy.create ~client
            {
              Braid_proxy.default with
              upstreams = [ "http://127.0.0.1:9001"; "http://127.0.0.1:9002" ];
            }
        with
        | Ok proxy ->
            Braid_web.Router.(
              empty |> use (Braid_proxy.middleware ~prefix:"/api" proxy))
        | Error msg -> failwith msg
    ]}

    {b What is forwarded.} The method, the target (the prefix replaced by the
    upstream URL's path when it has one, else unchanged), the header fields but
    the hop-by-hop ones (RFC 9110 §7.6.1: [Connection], [Keep-Alive],
    [Proxy-Connection], [TE], [Transfer-Encoding], [Upgrade], and every field
    [Connection] names), with [X-Forwarded-For] (the client's address appended),
    [X-Forwarded-Proto], [X-Forwarded-Host] and [Forwarded] (RFC 7239, appended
    to any the request had). [Host] is the client's unless
    {!config.preserve_host} is off. Bodies are streamed both ways, never held
    whole: the request body as the client sends it (with [Content-Length] if it
    had one, else chunked), the response body piece by piece to the client, with
    the upstream's [Content-Length] when it sent one (a [HEAD]'s answer too),
    else chunked. The response's hop-by-hop fields are dropped the same way; the
    server frames it anew. What the upstream's response holds (its connection,
    its pool slot) is given back when the exchange ends, even if the server
    never sends the body (a middleware that answers something else, a connection
    lost first: {!Braid_web.Handler.at_end}).

    {b Switching protocols (WebSocket).} A request that asks for an upgrade
    (HTTP/1.1, [Connection: upgrade], an [Upgrade] field) is forwarded with its
    [Upgrade] field; if the upstream answers [101] with one of the protocols
    offered, the client gets that [101] (with the upstream's end-to-end fields,
    as [Sec-WebSocket-Accept]) and the two connections are relayed byte for
    byte, both ways, until either side closes (then both close) or the server
    shuts down (then both close, with no WebSocket close frame). The relay runs
    in the connection's fiber and one it forks; no timeout applies but the
    server's send timeout to the client. A [101] with a protocol not offered is
    a [502].

    {b Choosing an upstream.} Round-robin or least-connections
    ({!type-balance}), among the upstreams not ejected. Passive health: an
    upstream that fails {!config.max_fails} times in a row (no connection, TLS
    failure, timeout, a connection lost or a malformed response) is left out for
    {!config.fail_timeout} seconds, then tried again. If all are ejected, they
    are tried anyway (a guess beats a sure [502]).

    {b Retries.} A request that failed before the upstream could see it
    (connection refused, TLS failure, connect timeout) is tried on another
    upstream, whatever its method. One that may have reached the upstream is
    tried again only if its method is idempotent (GET, HEAD, OPTIONS, TRACE,
    PUT, DELETE) and it has no body, and only before any byte of the response
    was passed on. At most {!config.retries} more attempts, each on an upstream
    not yet tried.

    {b Errors} become responses: [504 Gateway Timeout] when the upstream did not
    connect, answer or send in time, [502 Bad Gateway] for any other failure (no
    connection, a malformed or oversized response head, smuggling- shaped
    framing, a connection lost before the head). A response body cut short by
    the upstream closes the client's connection, so the client sees the
    truncation (a chunked body without its last chunk).

    {b Where it runs.} The handler runs in the connection's fiber, on any loop
    of the server: the client's pools are per loop. {!update} may be called from
    any domain while requests run: a request keeps the upstream set it started
    with.

    Not yet: HTTP/2 upstreams. *)

type balance =
  | Round_robin
  | Least_connections
      (** The upstream with the fewest requests in progress (counted over every
          loop), ties taken in turn. *)

type health_check = {
  path : string;
      (** Requested with [GET] from each upstream, as ["/healthz"]. *)
  interval : float;  (** Seconds between rounds (default 5). *)
  timeout : float;
      (** Seconds a check may take, connecting included (default 2): slower
          fails. *)
}
(** Active health checks ({!check_health}): an upstream that answers the check
    with other than [2xx] or [3xx], or not in time, is left out until a check
    passes, which also forgives its passive ejection. *)

val health_check : ?interval:float -> ?timeout:float -> string -> health_check
(** [health_check path] with the defaults above. *)

type config = {
  upstreams : string list;
      (** [http://] or [https://] URLs, at least one; a path in a URL replaces
          the prefix. *)
  balance : balance;  (** Default [Round_robin]. *)
  max_fails : int;  (** Failures in a row that eject an upstream (default 3). *)
  fail_timeout : float;  (** Seconds an ejected upstream is left out (10). *)
  retries : int;  (** More attempts after the first, where allowed (1). *)
  preserve_host : bool;
      (** Send the client's [Host] (default [true]); [false]: the upstream's. *)
  forwarded_proto : string option;
      (** The scheme [X-Forwarded-Proto] and [Forwarded] report: by default
          ([None]) the connection's, ["https"] over TLS
          ({!Braid_web.Handler.request.secure}), else ["http"]; [Some scheme]
          for a proxy behind another TLS terminator. *)
  health_check : health_check option;
      (** Default [None]: passive health only. Checks run only where
          {!check_health} (or {!Table.check_health}) runs. *)
}

val default : config
(** No upstream yet; the other fields as documented. *)

val client_config : Braid_client.config
(** What a proxy's client should be: no redirects followed (they are the
    client's to follow), connect timeout 5 s, first byte and read timeouts 60 s,
    header limits of 64 KiB and 100 fields (an upstream beyond them is a [502]),
    256 connections and 64 idle per upstream and loop. *)

type t

val create : client:Braid_client.t -> config -> (t, string) result
(** [create ~client config] checks [config] ([Error] names the bad URL or
    value). The [client]'s configuration holds the timeouts and limits (see
    {!client_config}). Any domain. *)

val update : t -> config -> (unit, string) result
(** [update t config] changes the upstreams and the policy of [t] at once, for
    requests that start from then on; an upstream kept (the same URL) keeps its
    health and its connections. On [Error], [t] is unchanged. Any domain. *)

val handler : t -> prefix:string -> Braid_web.Handler.t
(** [handler t ~prefix] forwards every request it gets; [prefix] is the part of
    the path that an upstream URL with a path replaces. Blocks the calling fiber
    while it waits for the upstream; a cancelled fiber (the server's handler
    timeout, its shutdown) closes the upstream connection. *)

val check_health : ?client:Braid_client.t -> t -> unit
(** [check_health t] runs [t]'s active health checks forever: each
    {!health_check.interval}, a [GET] of the path from every upstream at once,
    each in a fiber of its own, on [client] (default: one of its own, with
    {!client_config}, its connections closed when this returns). It follows
    {!update}s: a proxy without checks configured is looked at again every
    second. Blocks the calling fiber (a fiber of a {!Braid_io} loop); cancel it
    to stop. *)

val matches : prefix:string -> string -> bool
(** [matches ~prefix path]: [path] is [prefix] or under it ([/api] matches
    [/api] and [/api/x], not [/apix]). *)

val middleware : prefix:string -> t -> Braid_web.Router.middleware
(** [middleware ~prefix t next] forwards the requests whose path {!matches}
    [prefix], and passes the others to [next]. *)

(** {1 A table of prefixes, for a server that reloads} *)

module Table : sig
  type proxy := t
  type t

  val create : unit -> t
  (** An empty table. *)

  val set : t -> (string * proxy) list -> unit
  (** [set t routes] replaces the table at once, for requests that start from
      then on. Any domain. *)

  val get : t -> (string * proxy) list

  val middleware : t -> Braid_web.Router.middleware
  (** Requests whose path matches a prefix of the table (the longest) go to its
      proxy; the others to the next handler. *)

  val check_health : ?client:Braid_client.t -> t -> unit
  (** [check_health t] runs {!val-check_health} for every proxy of the table,
      one fiber each, as {!set} changes it (looked at every second): a proxy
      kept keeps its checks, one removed stops. Blocks the calling fiber (of a
      {!Braid_io} loop) forever; cancel it to stop. *)
end
