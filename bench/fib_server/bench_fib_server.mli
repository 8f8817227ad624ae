(** The thesis's Fibonacci server (§2.1, §6.2): [GET /fib/:n] where each request
    computes fib n (about 30 ms on one core), under open-loop load at fixed
    rates, in three variants:
    - [naive]: the connection fiber submits the computation to the pool, then
      waits with a Stdlib mutex/condition handshake, as Domainslib's [Task.run]
      does in the thesis's failing version: the event loop's whole domain
      stalls, so requests are served one at a time;
    - [composed]: the fiber awaits the pool's Braid promise, with at most as
      many computations admitted at once as the pool has domains (a Braid
      [Semaphore], first come first served): only that fiber waits, and
      computations of many requests overlap on the pool (with nested parallelism
      inside each);
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
