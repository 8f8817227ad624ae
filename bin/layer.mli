(** Layers of settings over a {!Braid_server.Config.t}, and the one place where
    their precedence is decided.

    [braid serve] has two sources besides the defaults: its configuration file
    ({!Config_file.layer}) and its command line ({!Cli.flags}). Each gives a
    layer: a list of settings, each a change to the configuration and where it
    comes from. {!resolve} applies the layers in order, so a later one wins
    where both set a value, and checks the result once, blaming an error on the
    setting that causes it. The changes themselves are defined here once, so the
    file and the flags set a value the same way. *)

open Braid_server

type change = Config.t -> Config.t
(** A change to some values of a configuration, leaving the others. *)

type setting = {
  origin : string;
      (** Where the change comes from, as errors name it: ["FILE:LINE"] or
          ["option '--port'"]. *)
  change : change;
}

type t = setting list
(** A layer: the settings of one source, in the order they apply (a later one
    wins where two set the same value). *)

val apply : t -> Config.t -> Config.t
(** [apply layer c] is [c] with the changes of [layer] in order. Unchecked. *)

val resolve : defaults:Config.t -> t list -> (Config.t, string) result
(** [resolve ~defaults layers] is [defaults] with each of [layers] applied in
    turn (the last has the highest precedence), checked by
    {!Server.check_config} (which makes the root absolute).

    When the check fails, the error is blamed on one setting:
    ["ORIGIN: message"]. Layers are examined from the highest precedence down:
    the blamed setting is the first of its layer (in the order the layer applies
    them) whose addition, over the defaults and under every layer of higher
    precedence, makes the check fail with the whole's error. So a setting of a
    lower layer that a higher one overrides is never blamed, and neither is a
    setting that fails only for want of a later one (an HTTPS port before its
    certificate's key): the error then names the setting that completes it, or
    stands alone. Blocks while it resolves the document root. *)

(** {1 Changes}

    What the file's directives and the command-line flags set. *)

val host : Unix.inet_addr -> change
(** The IP address to listen on (HTTPS too), keeping the ports. A Unix-domain
    address (which [braid serve] never has) counts as 127.0.0.1:8080, the
    default. *)

val port : int -> change
(** The port to listen on, keeping the IP address (as {!host}). *)

val tls_address : Unix.inet_addr option * int -> change
(** HTTPS on this port, and this address if given (else the plain listener's);
    turns HTTPS on. *)

val tls_chains : string list -> change
(** The certificate chain files for HTTPS, the default first, paired in order
    with {!tls_keys}; turns HTTPS on (port 8443 unless {!tls_address} says). *)

val tls_keys : string list -> change
(** The private key files, paired with {!tls_chains}. *)

val https_redirect : bool -> change
(** Whether the plain listener redirects to HTTPS. *)

val domains : int -> change
(** The number of event loops. *)

val io_backend : Braid_io.backend -> change
(** What the event loops wait in. *)

val root : string -> change
(** The document root. *)

val max_connections : int -> change
val precompressed : bool -> change
val metrics_path : string -> change
val metrics_allow : Unix.inet_addr list -> change

val health_path : string -> change
(** Whether precompressed variants of static files are served. *)

val max_connections_per_client : int option -> change
(** [None]: no cap. *)

val max_body : int -> change

val io_timeout : float -> change
(** Apache's [Timeout]: the request-head, body-read and send timeouts. *)

val request_header_timeout : float -> change
val keep_alive_timeout : float -> change
val body_timeout : float -> change
val send_timeout : float -> change

val handler_timeout : float option -> change
(** [None]: no limit. *)

val body_buffer : int -> change
(** Bytes of a whole-body read kept in memory. *)

val body_temp_dir : string -> change
(** Where bodies beyond [body_buffer] are spooled. *)

val spool_budget : int option -> change
(** Bytes of spooled bodies held at once by the whole server; [None]: derived
    from the free space of [body_temp_dir]. *)

val access_log : string option -> change
(** [None]: no access log. *)

val error_log : string option -> change
(** [None]: standard error. *)

(** {1 HTTP/2}

    The fields of {!Braid_server.Config.http2}. *)

val http2_enabled : bool -> change
(** Whether HTTP/2 is served (ALPN [h2] over TLS, h2c by prior knowledge). *)

val http2_max_streams : int -> change
val http2_stream_window : int -> change
val http2_connection_window : int -> change
val http2_max_header_list : int -> change
val http2_control_budget : int -> change
val http2_reset_budget : int -> change
