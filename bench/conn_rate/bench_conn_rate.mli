(** The [conn-rate] benchmark (Marlow's Figure 1): httperf opens connections at
    rising rates, one GET of the 1 KiB file per connection, against Braid
    ([braid-static], one event loop) and nginx (one worker) in the same run; the
    reply rate against the offered rate shows where each server stops keeping
    up.

    Servers are pinned to core 0 and httperf to core 1. Each rate runs for a few
    seconds ([--num-conns] = rate × seconds, [--num-calls 1], [--timeout 5]),
    the two servers alternating rate by rate. A run with any error or any reply
    other than 2xx has failed: its reply rate, connection time and server CPU
    are reported as no value (its error counts stay), and an error in the
    warm-up (1000 conn/s) fails the experiment. A server keeps up at a rate when
    its run did not fail and its 2xx reply rate (replies over httperf's test
    duration, which includes waiting for the last replies) is at least 95% of
    the offered rate.

    httperf runs without [--hog]: with it, httperf binds each client port itself
    without [SO_REUSEADDR], so ports in TIME_WAIT stay unusable for a minute and
    at these rates it spins until they expire. Without it the kernel picks
    ephemeral ports and, with [net.ipv4.tcp_tw_reuse] on (Linux's default 2
    covers loopback), reuses TIME_WAIT ports after a second. The rows record
    that setting, the port range and the TIME_WAIT count, so an exhausted client
    shows up as [addrunavail] errors rather than as a slow server. httperf also
    caps its descriptors at [FD_SETSIZE] (1024): more than about 1000
    connections in flight (offered rate × connection time) fail as [fd-unavail],
    which is how a server falling behind shows up at high rates. httperf's own
    CPU use is recorded for each run: near 100% of its core, the client and not
    the server is the limit. *)

val experiment : Bench_harness.experiment

type result = {
  connections : int;  (** Connections httperf made. *)
  replies_2xx : int;
  replies_not_2xx : int;  (** Replies with a 1xx, 3xx, 4xx or 5xx status. *)
  duration : float;  (** httperf's test duration, s. *)
  request_rate : float;  (** Requests sent per second, as httperf reports. *)
  connection_time_median : float;  (** ms. *)
  most_concurrent : int;  (** Most connections open at once. *)
  max_connect_burst : int;
      (** Most connections httperf opened in one pass of its loop: above a few,
          it was behind its schedule. *)
  errors : int;
  client_timo : int;
  connrefused : int;
  fd_unavail : int;
  addrunavail : int;
  client_cpu : float;  (** httperf's user + system time, % of one core. *)
}
(** What one httperf run reports. *)

val parse : string -> result
(** [parse report] reads httperf's summary.
    @raise Failure if a figure is missing. *)
