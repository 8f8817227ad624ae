(** The HTTP server's benchmarks.

    - [http]: wrk's keep-alive GETs of a 1 KiB static file, 100 connections, the
      server pinned to core 0 and wrk to core 1: Braid versus nginx (one worker,
      access log off) and a cohttp-lwt-unix static server, in the same run.
    - [reverse-post]: the 2022 study's protocol: sequential POSTs to [/reverse]
      of 10 to 100 KB on one keep-alive connection, and the server's allocation
      over 100-byte POSTs, for the same pipeline with effects and with direct
      calls.

    Servers run as separate processes: this binary re-executed in a role
    ({!Roles}), or nginx. *)

val http : Bench_harness.experiment
val reverse_post : Bench_harness.experiment

module Procs = Procs
(** Server processes, shared with other experiments that run servers. *)

module Wrk = Wrk
(** wrk runs, failing on any error, shared likewise. *)

module Peers = Peers
(** nginx and h2o as the benchmarks run them. *)

(** {1 For other experiments that run the same servers} *)

val server_cpu : int
(** The core servers are pinned to (0). *)

val client_cpu : int
(** The core load generators are pinned to (1). *)

val public : unit -> string
(** [examples/public] of the source tree: the document root; [/1k.txt] is the 1
    KiB file of [http]. *)

val start_role :
  ?root:string ->
  ?env:(string * string) list ->
  ?backend:Braid_io.backend ->
  string ->
  port:int ->
  Procs.t
(** [start_role ?root ?env ?backend name ~port] starts this binary in server
    role [name] (see {!Roles}) on [port], serving [root], pinned to
    {!server_cpu}, with [env] added to its environment, its braid_io loops on
    [backend] (default [Epoll], whatever this process's [BRAID_IO_BACKEND]). *)
