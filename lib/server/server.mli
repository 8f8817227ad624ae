(** The HTTP server: one accept loop per domain, each on its own event loop (a
    listening socket per domain with [SO_REUSEPORT], so the kernel spreads
    connections), each connection in its own fiber.

    {[
      let main hello =
        let router = Router.empty |> Router.add GET "/hello" hello in
        let config =
          {
            Config.default with
            root = Some "www";
            listen = Braid_io.Net.tcp "0.0.0.0" 8080;
          }
        in
        match
          Server.create ~settings:(Real_services.settings router) config
        with
        | Error msg -> prerr_endline msg
        | Ok server -> Server.run server
    ]}

    Configuration is a value: each connection captures the {!Config.t} current
    when it is accepted, and {!set_config} changes what later connections see.

    At most [max_connections] (of the current configuration, read at each
    accept) connections are served at once over all loops. At the limit, the
    accept fiber of a loop accepts the next connection (someone does wait), then
    closes one of that loop's connections that has waited a second or more for a
    request, as nginx closes "reusable" ones: one that has sent nothing (a
    silent client, or one stalled in its TLS handshake) first; an idle
    keep-alive one only while none of those waits; never one in use. If none can
    be closed, it waits for a connection to end (looking again every 50 ms),
    holding the one it accepted, and the others wait in the kernel's backlog. So
    a flood of idle connections denies no one, and a client holding every slot
    in busy keep-alive connections loses none. A further connection from an
    address at its cap ([max_connections_per_client]) is answered [503] and
    closed without closing any other. When the process runs out of descriptors
    ([EMFILE]) the accept loop pauses 50 ms between attempts (logging once)
    instead of spinning. *)

open Braid_web

type t

val check_config : Config.t -> (Config.t, string) result
(** [check_config c] is [c] with its root made absolute and free of symbolic
    links, or why it is unusable (a root that is missing or not a directory,
    buffers or limits that are not positive, timeouts that are not positive or
    exceed {!Config.max_seconds}, a negative linger time, fewer than one
    domain). *)

val create : settings:Real_services.settings -> Config.t -> (t, string) result
(** [create ~settings config] is a server for [config.listen] (not yet
    listening) with [config.domains] event loops. Each loop answers the
    {!Braid_web.Services} of its connections, their fibers and their pool tasks
    with {!Real_services.services} of [settings]. [config] goes through
    {!check_config}. *)

val metrics : t -> Metrics.t option
(** [metrics t] is what [t] counts: [settings.metrics], or a new {!Metrics.t} if
    [config.metrics_path] is set. The metrics path (GET, from
    [config.metrics_allow], loopback by default; 403 otherwise) answers its
    counters plus the open connections, whether the server drains, the answering
    loop's fibers, the GC and the blocking pool; the health path answers 200
    until {!shutdown}, then 503. Both come before the routes. *)

val raise_descriptor_limit : unit -> int
(** [raise_descriptor_limit ()] raises this process's soft limit of open
    descriptors ([RLIMIT_NOFILE]) to its hard limit (at most 1,048,576) and
    returns the soft limit now in force, as nginx and h2o do at start: each
    connection takes a descriptor. Process-wide, so a program calls it, not the
    library: [braid serve] does, before deriving its connection limit. Raises
    [Unix.Unix_error] if the system refuses. *)

val connections_for_descriptors : int -> int
(** {!Config.connections_for_descriptors}. *)

val config : t -> Config.t
(** The configuration new connections get. *)

val set_config : t -> Config.t -> (unit, string) result
(** [set_config t c] makes connections accepted from now on use [c] (after
    {!check_config}), and the certificates of [c.tls], read again (a file that
    fails to load is an [Error] and leaves the configuration in force);
    connections in progress keep theirs. [c.listen], [c.domains], whether
    [c.tls] is set and its address are ignored (HTTPS stays on or off as the
    server started): the server keeps the address and the loops it was created
    with (changing them needs a new server), and {!config} reports those.
    Callable from any domain or thread. *)

val https_address : t -> Unix.sockaddr option
(** The address HTTPS is served on ([config.tls]), with the port the kernel
    chose for port 0: [None] without HTTPS, or before {!run}'s first loop has
    bound it (it has when [on_listen] is called). Any domain. *)

val run :
  ?on_listen:(Unix.sockaddr -> unit) ->
  ?background:(unit -> unit) ->
  ?listening:Unix.file_descr ->
  ?tls_listening:Unix.file_descr ->
  t ->
  unit
(** [run t] listens and serves until {!stop}, or until {!shutdown} has let the
    connections finish, then returns. [on_listen] gets the bound address (the
    port the kernel chose for port 0) once the first loop listens.

    With [listening], a socket already bound and listening (passed by systemd,
    as the braid command receives them), the server accepts on it instead of
    binding [config.listen]: each loop accepts on a duplicate of it, closed when
    the loop ends; [listening] itself stays open, the caller's. [tls_listening]
    is the same for HTTPS ([config.tls]; ignored without it).

    [background ()] runs in a fiber of the first loop (with the services in
    force), forked before [on_listen] is called (so [on_listen] may wait for it
    to be ready, e.g. subscribed to signals), from then on (to wait for signals,
    reload the configuration, write logs) and is cancelled (its blocking calls
    raise {!Braid.Cancelled}) only after the last connection of every loop has
    ended, whether by {!stop}, {!shutdown} or its deadline: a logger still sees
    the events of draining connections and can flush after them. If [background]
    raises, the server stops and [run] re-raises.

    Blocks the calling domain, which becomes the first loop; the others are new
    domains. Call it once, from a domain that runs no event loop.

    Raises [Invalid_argument] if the calling domain already runs a loop.
    @raise Braid_io.Io_error
      if the address cannot be bound ([EADDRINUSE], [EACCES]). *)

val stop : t -> unit
(** [stop t] makes {!run} return: listening stops and connections are cancelled
    (their fibers unwind and their sockets close). Callable from anywhere, any
    number of times, even before {!run}, and after {!shutdown} (to cut the drain
    short). *)

val shutdown : t -> deadline:float -> unit
(** [shutdown t ~deadline] stops the server gracefully: the listening sockets
    close at once (connections still in their backlog are refused), idle
    keep-alive connections close at once, and a connection in the middle of a
    request finishes it (the response says [Connection: close]) and then closes.
    {!run} returns when the last connection has ended, or [deadline] seconds
    from now, when the connections left are cancelled as by {!stop}. Returns at
    once; callable from any domain or thread, even before {!run}. Only the first
    call counts.

    Raises [Invalid_argument] unless [0 <= deadline <= Config.max_seconds]. *)

val connections : t -> int
(** The number of connections open now, over all loops (an accept in progress
    counts as one). For tests and monitoring. *)

(** {1 Signals} *)

val run_with_signals :
  ?shutdown_timeout:float ->
  ?on_terminate:(unit -> unit) ->
  ?on_reload:(unit -> unit) ->
  ?hand_over:(unit -> bool) ->
  ?logger:Log_writer.t ->
  ?on_listen:(Unix.sockaddr -> unit) ->
  ?background:(unit -> unit) ->
  ?listening:Unix.file_descr ->
  ?tls_listening:Unix.file_descr ->
  t ->
  unit
(** [run_with_signals t] is {!run} with the process's signals wired to the
    server's lifecycle, as {!serve} and [braid serve] run it:
    - SIGTERM or SIGINT: [on_terminate ()] (default: nothing), then {!shutdown}
      with [shutdown_timeout] (default 10 s); a second one: {!stop}.
    - SIGHUP, only with [on_reload]: [on_reload ()], at each signal (otherwise
      SIGHUP keeps its disposition).
    - SIGUSR2, only with [hand_over]: [hand_over ()], at each signal until it
      returns [true] (a successor process serves now): then {!shutdown} as for
      SIGTERM. It returns [false] when the hand-over failed and this server goes
      on serving.

    Each callback runs in a fiber of the first loop, with the services in force,
    and may block it. The watching fibers, [logger]'s writer ({!Log_writer.run})
    and [background] run beside the server as {!run}'s [background] does: forked
    before [on_listen] is called, cancelled after the last connection of every
    loop has ended, so the logger still writes the draining connections' events.
    [on_listen] is called once every signal is watched: a signal sent after it
    is not missed. [listening] and [tls_listening] are {!run}'s.

    Blocks the calling domain as {!run}, and raises as it does. *)

(** {1 Library mode} *)

val serve :
  ?config:Config.t ->
  ?log_level:Log.level ->
  ?shutdown_timeout:float ->
  ?on_listen:(Unix.sockaddr -> unit) ->
  ?background:(unit -> unit) ->
  Router.t ->
  (unit, string) result
(** [serve router] serves [router] as [braid serve] serves its routes, until the
    process gets SIGTERM or SIGINT: then it shuts down gracefully ({!shutdown}
    with [shutdown_timeout], default 10 s), and a second signal stops it at once
    ({!stop}); [serve] then returns [Ok ()]. It runs the server with
    {!run_with_signals}, logging the first signal at [Info].

    [config] (default {!Config.default}: 127.0.0.1:8080) gives the address, the
    document root and the limits. Messages up to [log_level] (default [Info]) go
    through a {!Log_writer} to [config.error_log] (default standard error),
    access entries (Combined Log Format) to [config.access_log], or, without
    one, at [Info] and [Debug], to the error log: each request is a line.
    [on_listen] gets the bound address once the signals are watched.
    [background] runs beside the server as {!run}'s does.

    Blocks the calling domain until the server has stopped, as {!run}. [Error]
    if the configuration is unusable ({!check_config}) or the address cannot be
    bound. Raises [Invalid_argument] as {!run}. *)

(** {1 For the benchmarks}

    Exposed as [Braid_server.Private.Server]. *)

module Private : sig
  val create_with_direct_calls :
    settings:Real_services.settings -> Config.t -> (t, string) result
  (** As {!create}, but the pipeline calls the production services directly
      instead of looking up the services in force per request: the baseline of
      the effects-versus-direct-calls experiment. Request handlers still have
      the services in force. *)
end
