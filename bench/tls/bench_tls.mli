(** The [tls] benchmark: HTTPS, Braid ([braid serve --domains 1] with
    [--tls-port]) against nginx (one worker process), both with the same
    self-signed ECDSA P-256 certificate made by [openssl req] for the run, TLS
    1.2 and 1.3 enabled and every other TLS setting left to the server and
    OpenSSL (TLS 1.3 is negotiated; rows say which ciphersuite, key exchange
    group and signature, as [openssl s_client] and nginx's log saw them),
    serving the same 1 KiB file with no access log.

    - Full handshakes: {!Handshakes} opens a new connection, with a new TLS
      session, for each GET (16 at once).
    - Keep-alive: [wrk -t1 -c100] over [https://].

    wrk and h2load are not used for handshakes: when they reconnect they resume
    the session. Before the rounds, a check instance of each server counts, for
    this experiment's client and for [wrk -H 'Connection: close'], the sessions
    resumed (nginx: an access log of [$ssl_session_reused] and
    [$connection_requests]; Braid: the full, resumed and failed handshakes of
    its metrics). If either sees this client resume a session or send two
    requests on one connection, its runs are failed.

    The servers are pinned to core 0, the clients to core 1. Each round starts
    both servers afresh, checks that each serves the file intact over TLS 1.3
    (curl), warms them up (full runs), then measures each workload with the
    servers taking turns; figures are medians over rounds (3 rounds of 5 s;
    [--quick]: 1 round of 1 s, no warm-up, and no keep-alive check). Server CPU
    is user + system time of all the server's processes from [/proc/PID/stat]
    over the run, per handshake or request completed; the servers' and the
    clients' CPU use (% of one core) show which side was the limit. A run with
    any error (a failed connection or handshake, a status other than 200, a
    short body, wrk's socket errors or non-2xx responses) is failed: no figure,
    and a count of failed runs. Braid's server failing to start counts as failed
    runs, not as the end of the experiment. *)

val experiment : Bench_harness.experiment

module Handshakes = Handshakes
(** The full-handshake client, for [handshake_load.exe]. *)
