(** What the server's test suites share: searching text, files, child processes,
    and the server run on a domain of its own. *)

val find : string -> string -> int option
(** [find s sub] is the position of the first occurrence of [sub] in [s]. *)

val contains : string -> string -> bool
(** [contains s sub]: [sub] occurs in [s]. *)

val count : string -> string -> int
(** [count s sub] is the number of non-overlapping occurrences of [sub]. *)

val read_file : string -> string
(** [read_file path] is the file's contents.
    @raise Sys_error if it cannot be read. *)

val read_if_exists : string -> string
(** [read_if_exists path] is the file's contents, or [""] if it cannot be read
    (not created yet, or just rotated away). *)

val write_file : string -> string -> unit

val waitpid : int -> Unix.process_status
(** [waitpid pid] waits for the child [pid], retrying on [EINTR]. *)

val spawn_alone :
  string array ->
  stdin:Unix.file_descr ->
  stdout:Unix.file_descr ->
  stderr:Unix.file_descr ->
  int
(** [spawn_alone argv ~stdin ~stdout ~stderr] starts [argv.(0)] (searched in
    [PATH]) with these three descriptors and no other: none that this process,
    its test runner or their parents left open without close-on-exec. wrk needs
    this: its event loop holds descriptors below [10 + 3 x connections], and it
    counts a connection given a higher number as a connect error. Returns the
    child's pid. *)

val send : Unix.file_descr -> string -> unit
(** [send s data] writes [data] in one write.
    @raise Failure on a short write. *)

val read_to_end : Unix.file_descr -> string
(** [read_to_end s] reads until the peer closes or resets.
    @raise Failure
      if a receive timeout ([SO_RCVTIMEO]) expires first: the server neither
      answered nor closed. *)

val serving :
  ?background:(unit -> unit) -> Braid_server.Server.t -> (int -> 'a) -> 'a
(** [serving server f] runs [server] (bound to port 0) on a new domain (with
    [background] as {!Braid_server.Server.run}'s), calls [f port] once it
    listens, then stops the server and joins the domain, whether [f] returns or
    raises. Blocks the calling domain (use it outside any Braid scheduler).
    @raise e if the server fails to start with [e]. *)

val self_signed : string -> string * string
(** [self_signed dir] makes a self-signed certificate for [localhost] (ECDSA
    P-256) and its key in [dir] with the openssl command: their paths. *)
