(** What the server is doing, in the Prometheus text exposition format (version
    0.0.4): requests by method and status class and by protocol, a request
    duration histogram, response bytes, connections accepted, closed and
    refused, and, at each scrape, the gauges the caller adds (open connections,
    the loop's fibers, the blocking pool, the GC).

    One value for the whole server, shared by its loops: counters are atomic, so
    any domain may update or render them. Updates never block and allocate
    nothing. Off unless the server is given one. *)

open Braid_web

type t

val create : unit -> t

val observe : t -> Log_event.access -> now:float -> unit
(** [observe t access ~now] counts one response: its method (GET, HEAD, POST,
    PUT, DELETE, OPTIONS, PATCH, or other), its status class, its request's
    protocol (HTTP/1.0, HTTP/1.1, HTTP/2.0, or none read), its duration
    ([now - access.time], both [Unix.gettimeofday] seconds) and its body bytes.
*)

val received : t -> int -> unit
(** [received t n] counts [n] bytes read from a client connection. *)

val accepted : t -> unit
val closed : t -> unit

val refused : t -> unit
(** A connection closed at once to admit another (the connection limit) or
    answered 503 (the per-client cap). *)

val reloaded : t -> ok:bool -> unit

type handshake = Full | Resumed | Failed

val tls_handshake : t -> handshake -> unit
(** A TLS handshake ended: a full one, one that resumed a session, or one that
    failed or timed out. *)

type gauge = { name : string; help : string; value : float; counter : bool }
(** A figure read at each scrape: a gauge, or a counter kept elsewhere
    ([counter = true]: rendered with [# TYPE counter]). *)

val gauge : string -> string -> float -> gauge
(** [gauge name help value]. *)

val counter : string -> string -> int -> gauge
(** [counter name help value]: a counter's value read at the scrape (its name
    ends in [_total]). *)

val render : t -> gauge list -> string
(** [render t gauges] is the exposition text: every counter of [t], then
    [gauges], each metric with its [# HELP] and [# TYPE] lines. Names are
    prefixed [braid_]. *)

val process_gauges : unit -> gauge list
(** The GC figures of [Gc.quick_stat] and the process's blocking pool
    ({!Braid_io.Blocking.shared}). *)
