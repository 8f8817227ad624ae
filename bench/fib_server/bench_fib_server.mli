(** The thesis's Fibonacci server (§2.1, §6.2): [GET /fib/:n] where each request
    computes fib n (about 30 ms on one core), under open-loop load at fixed
    fractions of what two cores can compute, with two workloads: fib requests
    only, and mixed (four cheap [GET /hello] per computation, whose latency
    shows what a stalled event loop costs the requests that need no
    computation). Throughput counts the responses that arrive while the load is
    offered. A run in which any request failed (an error, a status other than
    200, no answer within 30 s) has failed: its throughput and latencies are
    reported as no value, next to its count of failed requests. Three variants
    of the handler:
    - [naive]: the connection fiber submits the computation to the pool, then
      waits with a Stdlib mutex/condition handshake, as Domainslib's [Task.run]
      does in the thesis's failing version: the event loop's whole domain
      stalls, so requests are served one at a time;
    - [composed]: the fiber awaits the pool's Braid promise, one computation
      admitted at a time (a Braid [Semaphore], first come first served; nested
      parallelism spreads each over the pool): the naive schedule, but only that
      fiber waits, and the loop keeps serving other requests;
    - [domain-manager]: each request runs a sequential fib on a domain of its
      own, awaited by a promise: parallel across requests, no nesting, a domain
      spawned per request.

    The servers are processes of the benchmark binary in a server role (see
    {!dispatch}). *)

val experiment : Bench_harness.experiment

val dispatch : unit -> unit
(** [dispatch ()] returns at once unless [BRAID_BENCH_ROLE] names one of this
    experiment's server roles ([fib-naive], [fib-composed],
    [fib-domain-manager]); then it serves on [BRAID_BENCH_PORT] until killed. *)
