(** The configuration file of [braid serve]: Apache-like directives.

    {v
      # One directive per line; '#' starts a comment line.
      Listen 127.0.0.1:8080
      DocumentRoot "/srv/my site"
      KeepAliveTimeout 5
    v}

    A line is a directive name (case-insensitive, as Apache's) and its
    arguments, separated by blanks; an argument with blanks is written between
    double quotes (inside them, a backslash escapes a quote or a backslash). A
    comment is a whole line starting with [#] (after optional blanks), as in
    Apache: [#] after a directive is an argument. Each directive may appear
    once. The directives and their values:

    - [Listen ADDR]: [PORT], [HOST:PORT] or [[IPV6]:PORT] (IP literals).
    - [Domains N]: event loops, [N >= 1].
    - [DocumentRoot DIR]: the static files' root ({!Config.t.root}); a relative
      [DIR] is relative to the configuration file's directory.
    - [MaxConnections N] ([N >= 1]), [MaxBodySize BYTES] ([>= 0]).
    - [Timeout SECONDS]: Apache's I/O timeout: the request-head, body-read and
      send timeouts; [RequestHeaderTimeout SECONDS] sets the first alone.
    - [KeepAliveTimeout SECONDS]; [HandlerTimeout SECONDS|off].
    - [AccessLog FILE|off], [ErrorLog FILE|stderr]: relative paths as for
      [DocumentRoot].

    Seconds are positive decimals. *)

open Braid_server

type listen = { host : string option; port : int }

type t = {
  file : string;  (** The file's name, as given: errors are prefixed with it. *)
  listen : listen option;
  domains : int option;
  document_root : string option;
  max_connections : int option;
  max_body_size : int option;
  timeout : float option;
  request_header_timeout : float option;
  keep_alive_timeout : float option;
  handler_timeout : float option option;  (** [Some None]: [off]. *)
  access_log : string option option;  (** [Some None]: [off]. *)
  error_log : string option option;  (** [Some None]: standard error. *)
  lines : (string * int) list;
      (** Each directive present (canonical name) and its line. *)
}
(** A parsed file: [None] for a directive that is absent. Paths are as written,
    relative ones made relative to the directory of [file]. *)

val parse : file:string -> string -> (t, string) result
(** [parse ~file text] reads the directives of [text]. Stops at the first error:
    ["FILE:LINE: message"] (unknown directive, missing or extra arguments,
    unterminated quote, a bad number, address or port, a value out of range, a
    duplicate directive). *)

val load : string -> (t, string) result
(** [load file] reads and parses [file] (["FILE: reason"] if it cannot be read).
    Blocks while it reads. *)

val apply : t -> Config.t -> Config.t
(** [apply f base] is [base] with the settings [f] has. Unchecked. *)

val to_config :
  ?override:(Config.t -> Config.t) -> t -> Config.t -> (Config.t, string) result
(** [to_config f base] is [override (apply f base)] checked by
    {!Server.check_config} ([override], default the identity, applies what takes
    precedence over the file: command-line flags). An error caused by a
    directive of [f] is reported at its line (["FILE:LINE: message"]); one that
    [override base] has already is reported as is. Blocks while it resolves the
    document root. *)
