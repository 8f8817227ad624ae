(** h2load (nghttp2's HTTP/2 load generator) runs, pinned to a core, for a fixed
    time; any error fails the run. *)

type result = {
  succeeded : int;  (** Requests answered with a 2xx. *)
  requests_per_second : float;
}

val run :
  cpu:int ->
  connections:int ->
  streams:int ->
  requests:int ->
  string ->
  (result, string) Stdlib.result
(** [run ~cpu ~connections ~streams ~requests url] runs [h2load -t 1] on core
    [cpu] with [connections] connections of at most [streams] concurrent streams
    each ([-m]) against [url] (h2c for [http:], h2 by ALPN for [https:]),
    [requests] requests in all ([-n]). Its rate is over the whole run,
    connecting included: h2load's timed mode ([-D]) counted no request at all in
    runs under a second here. [Error] with h2load's report if it exited with a
    failure, or any request failed, errored, timed out or got a status other
    than 2xx, or none succeeded. Blocks the calling thread. *)

val parse : string -> (result, string) Stdlib.result
(** [parse report] reads h2load's report, as {!run} judges it. *)
