(** Running wrk and reading its report. *)

type result = {
  requests : int;  (** Responses completed. *)
  requests_per_second : float;
  p50_ms : float;
  p99_ms : float;
  errors : int;
      (** Socket errors (connect, read, write, timeout) plus responses with a
          status outside 2xx and 3xx. *)
}

val run : cpu:int -> connections:int -> seconds:int -> string -> result
(** [run ~cpu ~connections ~seconds url] runs one wrk thread pinned to [cpu]
    with [connections] keep-alive connections for [seconds], with [--latency].
    @raise Failure
      if wrk fails, its report cannot be read, or it saw errors: a run with
      errors is a failed run, not a figure (a server answering 403 quickly is
      not fast). *)

val run_observed :
  cpu:int ->
  connections:int ->
  seconds:int ->
  string ->
  observe:(unit -> 'a) ->
  result * 'a
(** [run_observed ~cpu ~connections ~seconds url ~observe] is {!run}, calling
    [observe ()] once wrk has started, while it runs (say, to see the server
    hold wrk's connections), and returning its value with wrk's result.
    @raise Failure as {!run}; an exception of [observe] once wrk has ended. *)

val parse : string -> result
(** [parse report] reads the completed requests, [Requests/sec], the 50% and 99%
    lines of the latency distribution (us, ms or s) and the error lines (absent:
    none).
    @raise Failure if one of the others is missing. *)
