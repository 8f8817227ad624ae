(** The command line of [braid serve]: its options as Cmdliner terms, and the
    configuration they make with the configuration file. *)

open Braid_server
open Braid_web

val flags : Layer.t Cmdliner.Term.t
(** The options that set the configuration, as a layer of the same kind as the
    file's ({!Config_file.layer}): [--host], [--port] ([-p]), [--root],
    [--domains], [--max-body], [--max-connections], [--header-timeout],
    [--keep-alive-timeout], [--body-timeout], [--send-timeout],
    [--handler-timeout], [--access-log] and [--error-log] ([-] for either log:
    [/dev/stdout]). Each option given is one setting, with origin
    ["option '--NAME'"]; an absent one sets nothing. Cmdliner checks the syntax
    of values (an IP literal, a port from 0 to 65535, a duration as
    {!Config_file.duration} reads it, an existing directory for [--root]);
    {!config} checks the rest. *)

val config :
  ?defaults:Config.t ->
  file:Config_file.t option ->
  Layer.t ->
  (Config.t, string) result
(** [config ~file flags] is the configuration [braid serve] runs with:
    [defaults] (default {!Config.default}), under the settings of [file], under
    [flags] (the command line beats the file, which beats the defaults),
    checked, by {!Layer.resolve}. An error is reported at the [FILE:LINE] of the
    directive that causes it, or names the option. Used at start and at every
    reload. Blocks while it resolves the document root. *)

(** {1 The other options} *)

val config_file : string option Cmdliner.Term.t
(** [--config FILE] ([-c]): the configuration file, which must exist. *)

val demo : bool Cmdliner.Term.t
(** [--demo]: add the demonstration routes ({!Demo.routes}). *)

val log_level : Log.level Cmdliner.Term.t
(** [--log-level LEVEL]: the most detailed messages logged (default [warning]).
*)

val shutdown_timeout : float Cmdliner.Term.t
(** [--shutdown-timeout SECONDS]: how long a graceful shutdown lets requests in
    progress finish (default 10): a duration as {!Config_file.duration} reads
    it, [0] allowed. *)

val io_backend : Braid_io.backend option Cmdliner.Term.t
(** [--io-backend uring|epoll]: braid_io's backend for the server's loops
    ({!Braid_io.type-backend}); [None] if absent. *)

val dev : bool Cmdliner.Term.t
(** [--dev]: serve HTTPS with a development certificate ({!dev_layer}). *)

val dev_layer : unit -> (Braid_tls.Dev_certificate.t * Layer.t, string) result
(** The development certificate of
    {!Braid_tls.Dev_certificate.default_directory}, made if needed
    ({!Braid_tls.Dev_certificate.ensure}), and the settings that serve it: a
    layer to put before {!flags}, so [--tls-cert] and [--tls-key] win. Blocks
    while it reads or writes the files. *)
