(** The servers Braid is compared with, started as the benchmarks configure
    them: nginx and h2o (Debian packages), each with one worker, no access log
    and keep-alive, serving a directory of files on 127.0.0.1. Their
    configuration goes in a fresh directory under the temporary directory (mode
    755: started as root, they serve as an unprivileged user), removed when they
    stop. *)

val temp_dir : string -> string
(** [temp_dir prefix] is a fresh directory under the temporary directory, with
    mode 755 so that a server's unprivileged worker can reach what it holds (a
    document root, say). *)

val remove_tree : string -> unit
(** [remove_tree dir] removes [dir] and everything under it. *)

val start_nginx :
  ?backlog:int ->
  ?connections:int ->
  ?sendfile:bool ->
  ?tls:string * string ->
  ?log:string * string ->
  ?http2:bool ->
  cpu:int ->
  port:int ->
  root:string ->
  unit ->
  (Procs.t * (unit -> unit)) option
(** [start_nginx ~cpu ~port ~root ()] starts nginx (one worker process, access
    log off, [keepalive_requests] 1,000,000) on 127.0.0.1:[port], pinned to
    [cpu], and returns its master process and the function that stops it and
    removes its files; [None] if nginx is not installed. [backlog] sets its
    listen queue (nginx's default is 511). [connections]: room for that many
    connections at once ([worker_connections], and [worker_rlimit_nofile] up to
    this process's hard limit), every waiting connection accepted at each
    wake-up ([multi_accept on]), and keep-alive connections kept for an hour
    whether busy or idle (else 4096 connections and nginx's keep-alive
    defaults). [sendfile] (default [false], nginx's own default) turns on
    [sendfile] and [tcp_nopush], as Debian's packaged configuration does. [tls]
    [(certificate, key)]: HTTPS on the port, TLS 1.2 and 1.3. [log]
    [(format, path)]: an access log in that [log_format] instead of none.
    [http2] (default [false]): the listener serves HTTP/2 (nginx 1.22's
    [listen ... http2]): h2 by ALPN with [tls], else h2c by prior knowledge only
    (HTTP/1.1 no longer); idle HTTP/2 connections kept for an hour.
    @raise Failure as {!Procs.spawn}. *)

val start_h2o :
  ?tls:string * string ->
  connections:int ->
  cpu:int ->
  port:int ->
  root:string ->
  unit ->
  (Procs.t * (unit -> unit)) option
(** [start_h2o ~connections ~cpu ~port ~root ()] starts h2o with one thread
    ([num-threads: 1]), no access log, [max-connections] [connections] and idle
    keep-alive connections kept for an hour ([http1-request-timeout]) on
    127.0.0.1:[port], pinned to [cpu]; as {!start_nginx} otherwise. h2o serves
    HTTP/2 on every listener (h2c by prior knowledge beside HTTP/1.1, h2 by ALPN
    with [tls] [(certificate, key)]), idle HTTP/2 connections kept for an hour
    too. *)

val start_in_temp_dir :
  name:string ->
  paths:string list ->
  cpu:int ->
  port:int ->
  config:(string -> string) ->
  argv:(string -> string -> string -> string list) ->
  (Procs.t * (unit -> unit)) option
(** [start_in_temp_dir ~name ~paths ~cpu ~port ~config ~argv] starts the first
    of [paths] that exists (else [None]) with its configuration [config dir]
    written to [dir/NAME.conf] in a fresh directory [dir] (removed when it
    stops), as [argv dir binary conf], pinned to [cpu]: for a peer configured
    otherwise than the functions above do.
    @raise Failure as {!Procs.spawn}. *)

(** {1 Several servers side by side} *)

type server = {
  label : string;
  port : int;
  proc : Procs.t;  (** For its CPU time and memory. *)
  stop : unit -> unit;
}

val start_all :
  experiment:string ->
  (string * (port:int -> (Procs.t * (unit -> unit)) option)) list ->
  server list
(** [start_all ~experiment starts] starts each server of [starts] (a label and a
    start on a free port), in order, skipping (and saying so under
    [experiment]'s name) one whose start is [None] (not installed). If a start
    raises, the servers already started are stopped before it is re-raised. *)

val stop_all : server list -> unit

val braid_binary : experiment:string -> string
(** The [braid] command of the same build (and profile) as the benchmark. Raises
    [Failure] naming [experiment] if it was not built. *)
