(** An open-loop HTTP load generator: requests start at a fixed rate whether or
    not earlier ones have finished (as httperf does), so a server that falls
    behind shows it in latency and throughput instead of slowing the client
    down. Each request uses its own connection. *)

type result = {
  offered : float;  (** Requests per second asked for. *)
  completed : int;  (** Responses with status 200. *)
  failed : int;  (** Errors, other statuses, and timeouts. *)
  duration : float;  (** From the first request to the last response, s. *)
  latencies : float array;  (** Of completed requests, seconds, sorted. *)
  most_in_flight : int;
}

val run :
  port:int ->
  path:string ->
  rate:float ->
  seconds:float ->
  timeout:float ->
  result
(** [run ~port ~path ~rate ~seconds ~timeout] sends [GET path] to
    127.0.0.1:[port] at [rate] requests per second for [seconds], and waits for
    the stragglers at most [timeout] seconds each. Blocks the calling domain (it
    runs its own event loop). *)

val percentile : float array -> float -> float
(** [percentile sorted p] with [p] in [0, 1]; [nan] if empty. *)
