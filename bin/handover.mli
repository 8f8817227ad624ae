(** The hand-over of the listening sockets to a new binary (what the log lines,
    the manual and nginx call a binary upgrade; "upgrade" alone is HTTP's
    [Upgrade] in this code), without a refused connection, nginx's way: the
    running server starts a new copy of its executable and hands it the
    listening socket; once the new process says it serves, the old one stops
    accepting and drains. Connections that arrive meanwhile wait in the socket's
    accept queue, which both processes share, so none is refused.

    The protocol is Braid's own (systemd's [LISTEN_PID] must name the child,
    which [posix_spawn] cannot know in advance): the child finds the socket's
    descriptor in [BRAID_LISTEN_FD] (and the HTTPS one's in
    [BRAID_LISTEN_TLS_FD]) and says it is ready by writing a line to the pipe
    named by [BRAID_READY_FD]. *)

val listen : ?backlog:int -> Unix.sockaddr -> Unix.file_descr
(** [listen addr] is a socket bound to [addr] and listening ([SO_REUSEADDR],
    close-on-exec, [backlog] 4096): the one socket a server can hand over.
    Blocks the calling thread for the [bind] only. Raises [Unix.Unix_error]. *)

val inherited : unit -> (Unix.file_descr option, string) result
(** [inherited ()] is the listening socket a predecessor handed over
    ([BRAID_LISTEN_FD]), made close-on-exec; [None] if there is none. [Error]
    says why a named descriptor is unusable. *)

val inherited_tls : unit -> (Unix.file_descr option, string) result
(** [inherited_tls ()] is the HTTPS listening socket a predecessor handed over
    ([BRAID_LISTEN_TLS_FD]), as {!inherited}. *)

val ready : unit -> unit
(** [ready ()] tells the predecessor, if any ([BRAID_READY_FD]), that this
    process now serves: it then stops accepting and drains. Call it once
    accepting. A predecessor gone already is no error. *)

val start_successor :
  listening:Unix.file_descr ->
  ?tls_listening:Unix.file_descr ->
  ?timeout:float ->
  string ->
  string array ->
  (int, string) result
(** [start_successor ~listening program argv] starts [program] with [argv] (and
    this process's environment, standard descriptors and the two variables
    above) and waits until it says it is ready: [Ok pid]. If it exits first, or
    is not ready within [timeout] seconds (default 30; it is then killed),
    [Error] says why, and this process should go on serving. Suspends only the
    calling fiber of a {!Braid_io} loop; the program starts on the fiber's
    {!Braid_io.Blocking} pool. [tls_listening], the HTTPS socket, is handed over
    too. The child gets the sockets as its descriptors 3 (and 5) and the pipe as
    4, duplicated in the child alone ({!Braid_io.Process.spawn_detached}): a
    process another fiber starts meanwhile inherits none of them. *)
