(** A load generator of full TLS handshakes: each request on a new connection,
    each connection a new TLS session.

    wrk and h2load both resume TLS sessions when they reconnect (with
    [Connection: close], in an nginx log of [$ssl_session_reused], wrk 4.1
    resumed 3,577 of 3,628 connections and h2load 1.52 4,950 of 5,000: the first
    of each connection slot only was full), so they measure resumptions, not
    handshakes. This one never calls [SSL_set_session]: each connection gets a
    fresh [SSL] object from OpenSSL (through ocaml-ssl), and its ClientHello
    offers no pre-shared key, so no server can resume it. The experiment checks
    that in nginx's log and Braid's metrics all the same.

    [connections] connections at once, each in turn: a non-blocking connect, a
    TLS handshake with OpenSSL's default client settings (no certificate
    verification: the certificate is self-signed), one [GET path HTTP/1.1] with
    [Connection: close], the response read to the end of its body
    ([Content-Length]), a [close_notify], and the socket closed; then a new
    connection in its place. One thread, [Unix.select]. *)

type result = {
  completed : int;
      (** Connections that completed a handshake and a 200 response with the
          expected length before the end of the run. *)
  seconds : float;  (** The run's length. *)
  errors : int;
      (** Connections that failed: refused, a failed handshake, a status other
          than 200, a body of another length, a connection closed early, or one
          that took more than 5 s. *)
  first_error : string option;  (** What the first failure was. *)
  client_cpu : float;
      (** This process's user + system CPU time over the run, s. *)
}

val run :
  connections:int ->
  seconds:float ->
  port:int ->
  path:string ->
  size:int ->
  result
(** [run ~connections ~seconds ~port ~path ~size] runs against 127.0.0.1:[port]
    for [seconds], expecting [size] bytes of body from [path]. Connections still
    in progress at the end are not counted either way. *)

val handshakes_per_second : result -> float
