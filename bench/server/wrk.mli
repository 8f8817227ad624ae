(** Running wrk and reading its report. *)

type result = { requests_per_second : float; p50_ms : float; p99_ms : float }

val run : cpu:int -> connections:int -> seconds:int -> string -> result
(** [run ~cpu ~connections ~seconds url] runs one wrk thread pinned to [cpu]
    with [connections] keep-alive connections for [seconds], with [--latency].
    @raise Failure if wrk fails or its report cannot be read. *)

val parse : string -> result
(** [parse report] reads [Requests/sec] and the 50% and 99% lines of the latency
    distribution (us, ms or s).
    @raise Failure if one is missing. *)
