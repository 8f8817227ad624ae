(** What the server logs, as structured values (the types of {!Log}, which adds
    the operations that emit them).

    Access entries carry the parsed request itself rather than a formatted line,
    so a writer can render any format ({!combined} is the Combined Log Format).
    Every event carries its time, read from the services' clock by whoever
    emitted it, so a log writer never reads a clock of its own. *)

type level = Error | Warning | Info | Debug

type access = {
  peer : Unix.sockaddr option;  (** [None] when not on a socket (tests). *)
  time : float;  (** When the request head was read, seconds since the epoch. *)
  request : Braid_http.Request.t option;
      (** [None] when the request could not be parsed. *)
  status : int;
  body_bytes : int;
      (** Bytes of content sent (after chunk framing is removed; 0 for HEAD). *)
}

type event =
  | Access of access  (** One per response, level [Info]. *)
  | Message of { time : float; level : level; text : string }
      (** [time]: seconds since the epoch. *)
  | Handler_failed of {
      time : float;  (** When the request head was read. *)
      request : Braid_http.Request.t;
      exn : exn;
      backtrace : Printexc.raw_backtrace;
    }  (** A request handler raised; the client got a 500. Level [Error]. *)

val level : event -> level

val time : event -> float
(** [time e] is when [e] happened, seconds since the epoch. *)

val level_to_string : level -> string
(** ["error"], ["warning"], ["info"], ["debug"]. *)

val combined : access -> string
(** [combined a] is [a] in the Combined Log Format, without a newline:
    [127.0.0.1 - - [10/Oct/2000:13:55:36 +0000] "GET /a.txt HTTP/1.1" 200 2326
     "http://ref/" "curl/8.0"]. Quotes, backslashes and control bytes in the
    request line, referer and user agent are escaped as nginx does ([\x22]). *)

val to_string : event -> string
(** [to_string e] is a one-line rendering of [e] (access entries as {!combined};
    a failed handler with its exception, the backtrace on following lines if
    recorded). *)
