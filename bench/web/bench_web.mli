(** The [web] benchmark: the TechEmpower Framework Benchmarks' six tests
    (plaintext, JSON, single query, 20 queries, fortunes, 20 updates) against a
    temporary PostgreSQL cluster ({!Postgres}), Braid ({!App}) side by side with
    Go [net/http] + [pgx] and Rust [axum] + [tokio-postgres] (bench/peers, built
    by bench/peers/build-web.sh).

    Each server is pinned to core 0; wrk (one thread) and PostgreSQL share core
    1. Every round starts the three servers afresh, checks every answer, then
    for each test lets the servers take turns (the order reversed every other
    round). A wrk run with a socket error or a non-2xx answer is a failed run; a
    server that answers a test's probe with 501 is recorded as not implementing
    it. *)

val experiment : Bench_harness.experiment

val dispatch : unit -> unit
(** Returns at once unless [BRAID_BENCH_ROLE] is [braid-web]; then serves
    Braid's web application ([BRAID_BENCH_PORT], [BRAID_BENCH_DATABASE_URL],
    [BRAID_BENCH_DB_POOL]) until killed and exits. *)

(**/**)

module App = App
module Braid_db_routes = Braid_db_routes
module Postgres = Postgres
