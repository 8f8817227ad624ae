(** The server's own routes: the metrics path and the health path of the
    configuration, answered before the application's routes. They are put into a
    listener's handler store ({!Braid_web.Services.t}'s [find_handler]) in front
    of its routes ({!in_front}) when the loop makes its services, not
    substituted for the store afterwards. Internal to the server.

    The paths are read from the configuration in force at each lookup, so a
    reload ({!Server.set_config}) moves or removes them for the next request, on
    connections already open too. *)

open Braid_web

type t

type figures = {
  connections_open : unit -> int;  (** Over all loops. *)
  connections_idle : unit -> int;
      (** Waiting for a request, as of each loop's last sweep. *)
  draining : bool Atomic.t;  (** Set once the server shuts down. *)
  spool : Spool_budget.t;  (** The spool budget, for its gauges. *)
}
(** What the server knows of itself, for the metrics and the health path. Read
    from the connection's fiber, on any loop's domain. *)

val create :
  config:Config.t Atomic.t -> metrics:Metrics.t option -> figures -> t
(** [create ~config ~metrics figures] answers the paths of [Atomic.get config].
    Without [metrics] the metrics path answers nothing (the server makes a
    {!Metrics.t} whenever a metrics path is set). *)

val in_front :
  t ->
  (Braid_http.Method.t -> string -> Router.found) ->
  Braid_http.Method.t ->
  string ->
  Router.found
(** [in_front t routes] is the handler store made of the endpoints then
    [routes]. An endpoint answers a [GET] or [HEAD] of exactly its path (the raw
    path, dot-segments resolved; not percent-decoded): the metrics path first,
    then the health path. Each takes no body ([max_body = Some 0]). Any other
    method or path falls through to [routes meth path] (so not [405]).

    The metrics endpoint answers a peer of [config.metrics_allow] (loopback when
    the list is empty; a Unix-domain peer, or none, always) the counters of
    [metrics] with the open and idle connections, whether the server drains, the
    fibers of the answering loop, the spool budget's gauges and the process
    gauges (GC, the blocking pool); others [403]. The health endpoint answers
    [200 ok] until the server drains, then [503]. The endpoints and their
    handlers never block and perform no effect. *)
