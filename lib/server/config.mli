(** The server's configuration: an immutable value.

    Each connection captures the configuration current when it is accepted and
    keeps it for its whole life; the accept loop reads the current value at each
    accept ({!Server.set_config}), so a reload swaps what new connections see
    without touching those in progress. Limits and (later) timeouts live here
    for that reason. *)

type t = {
  limits : Braid_http.Limits.t;
      (** Request line, header section and body limits. [limits.max_body] is the
          largest body any route accepts (routes may lower it). *)
  root : string option;
      (** The document root for static files, as an absolute path without
          symbolic links ({!Server} canonicalises it); [None] serves no files.
      *)
  index : string;  (** The file served for a directory: ["index.html"]. *)
  input_buffer : int;
      (** Initial size of a connection's input buffer, in bytes. It grows only
          for longer request heads (bounded by [limits]). *)
  output_buffer : int;
      (** Size of a connection's output buffer: a response whose head and body
          fit is sent with one write. *)
  linger : float;
      (** When the server closes a connection, it stops sending and discards
          what the client still sends for at most this many seconds (and 1 MiB),
          so its last response is not destroyed by a reset. *)
}

val default : t
(** {!Braid_http.Limits.default}, no root, ["index.html"], 4 KiB input and 16
    KiB output buffers, 2 s of lingering. *)
