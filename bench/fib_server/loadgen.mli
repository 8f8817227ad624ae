(** An open-loop HTTP load generator: requests start at a fixed rate whether or
    not earlier ones have finished (as httperf does), so a server that falls
    behind shows it in latency and throughput instead of slowing the client
    down. Each request uses its own connection. *)

type per_path = {
  path : string;
  latencies : float array;  (** Of completed requests, seconds, sorted. *)
  failed : int;  (** Errors, other statuses than 200, and timeouts. *)
}

type result = {
  offered : float;  (** Requests per second asked for. *)
  window : float;  (** How long requests were started, seconds. *)
  completed_in_window : int;
      (** Responses with status 200 that arrived while requests were still being
          started: divided by [window], the throughput sustained under the
          offered load (a backlog answered after the load stops does not count).
      *)
  failed : int;
  latencies : float array;  (** Of all completed requests, seconds, sorted. *)
  by_path : per_path list;  (** The same, for each distinct path. *)
  most_in_flight : int;
}

val run :
  port:int ->
  paths:string array ->
  rate:float ->
  seconds:float ->
  timeout:float ->
  result
(** [run ~port ~paths ~rate ~seconds ~timeout] sends [GET] requests to
    127.0.0.1:[port] at [rate] requests per second for [seconds], request [i]
    for [paths.(i mod n)], and waits for the stragglers at most [timeout]
    seconds each. Blocks the calling domain (it runs its own event loop).
    @raise Invalid_argument if [paths] is empty. *)

val percentile : float array -> float -> float
(** [percentile sorted p] with [p] in [0, 1]; [nan] if empty. *)
