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

    - [Listen ADDR]: [PORT], [HOST:PORT] or [[IPV6]:PORT] (IP literals); [PORT]
      alone keeps the default host.
    - [Domains N]: event loops, [N >= 1].
    - [DocumentRoot DIR]: the static files' root
      ({!Braid_server.Config.t.root}); a relative [DIR] is relative to the
      configuration file's directory.
    - [MaxConnections N] ([N >= 1]), [MaxConnectionsPerClient N|off],
      [MaxBodySize BYTES] ([>= 0]).
    - [BodyBufferSize BYTES] ([>= 0]): the part of a whole-body read kept in
      memory; [BodyTempDirectory DIR]: where the rest is spooled;
      [BodySpoolBudget BYTES|auto]: the most bytes spooled at once by the whole
      server ([auto]: a quarter of the directory's free space, at most 1 GiB).
    - [Timeout SECONDS]: Apache's I/O timeout: the request-head, body-read and
      send timeouts; [RequestHeaderTimeout SECONDS] sets the first alone, and
      wins over [Timeout] wherever it is in the file.
    - [KeepAliveTimeout SECONDS]; [HandlerTimeout SECONDS|off].
    - [AccessLog FILE|off], [ErrorLog FILE|stderr]: relative paths as for
      [DocumentRoot].

    Seconds are written as {!duration} reads them, and are positive.

    Each directive is declared once, in a table: its name, how its argument
    parses and what it changes ({!Layer.change}). A parsed file is a {!Layer.t},
    which {!Layer.resolve} puts under the command line. *)

type directive = {
  name : string;  (** The canonical name, e.g. ["DocumentRoot"]. *)
  line : int;  (** Where it is, from 1. *)
  change : Layer.change;
      (** What it sets (its argument parsed and checked, a relative path made
          relative to the file's directory). *)
}

type proxy = {
  prefix : string;  (** The path prefix forwarded, e.g. ["/api"]. *)
  proxy_line : int;  (** Where it is, from 1. *)
  proxy : Braid_proxy.config;  (** Its upstreams (checked URLs) and options. *)
}
(** A [ProxyPass PREFIX URL... [OPTION=VALUE...]] directive: requests under
    [PREFIX] go to the upstreams ({!Braid_proxy}). Repeatable, once per prefix.
    Options: [balance=round-robin|least-connections], [retries=N],
    [max_fails=N], [fail_timeout=SECONDS], [preserve_host=on|off],
    [forwarded_proto=SCHEME], [health_check=PATH] then optionally
    [health_interval=SECONDS] (5) and [health_timeout=SECONDS] (2): active
    health checks ({!Braid_proxy.check_health}). *)

type t = {
  file : string;  (** The file's name, as given: errors are prefixed with it. *)
  directives : directive list;  (** In the file's order. *)
  proxies : proxy list;  (** The [ProxyPass] directives, in the file's order. *)
}

val directive_names : string list
(** The canonical name of every directive, in the order {!layer} applies them
    ([Timeout] before [RequestHeaderTimeout], so the latter wins). *)

val parse : file:string -> string -> (t, string) result
(** [parse ~file text] reads the directives of [text]. Stops at the first error:
    ["FILE:LINE: message"] (unknown directive, missing or extra arguments,
    unterminated quote, a bad number, address or port, a value out of range, a
    duplicate directive: ["duplicate Timeout (first at line 3)"]). *)

val load : string -> (t, string) result
(** [load file] reads and parses [file] (["FILE: reason"] if it cannot be read).
    Blocks while it reads. *)

val layer : t -> Layer.t
(** The file's settings in the order of {!directive_names}, each with origin
    ["FILE:LINE"], so an error {!Layer.resolve} finds in the resulting
    configuration is reported at the line of the directive that causes it. *)

(** {1 Values shared with the command line} *)

val ip_address : string -> (Unix.inet_addr, string) result
(** An IPv4 or IPv6 literal (no name resolution, which would block). *)

val cap_or_off : string -> (int option, string) result
(** A cap: a whole number at least 1, or [off] ([None]). *)

val port : string -> (int, string) result
(** A port: a whole number from 0 to 65535. *)

val duration : ?zero:bool -> name:string -> string -> (float, string) result
(** [duration ~name s] is the duration [s] in seconds, for every duration of the
    file and of the command line: [DIGITS] or [DIGITS.DIGITS] with at most three
    decimals (the resolution is 1 ms), positive (or zero, with [zero]), at most
    31536000 seconds (365 days: {!Braid_server.Config.max_seconds}). No sign,
    exponent, hexadecimal, underscore, [nan] or [inf], no unit. The error names
    the value [name] and says the rule broken, e.g.
    ["KeepAliveTimeout must be at most 31536000 seconds (365 days), not
     31536000.5"]. *)
