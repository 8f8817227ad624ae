(** Child processes: start a program with arguments, environment, working
    directory and standard descriptors, talk to it through pipes, and await its
    exit without blocking the loop.

    {[
      Braid_io.run @@ fun () ->
      Switch.run @@ fun sw ->
      let p = Process.spawn ~sw ~stdin:`Pipe ~stdout:`Pipe "sort" [ "-r" ] in
      Fd.write_string (Process.stdin p) "a\nb\nc\n";
      Fd.close (Process.stdin p);
      let buf = Bytes.create 100 in
      let n = Fd.read_into (Process.stdout p) buf 0 100 in
      match Process.await p with
      | WEXITED 0 -> print_string (Bytes.sub_string buf 0 n)
      | _ -> failwith "sort failed"
    ]}

    {b Starting.} The child is created with [posix_spawn] (OCaml 5's [Unix.fork]
    refuses to run while several domains exist), which returns once the child
    has exec'd the program: a millisecond or so, tens of them on a loaded
    machine. So {!spawn} makes the call on the fiber's {!Blocking} pool and
    blocks only the calling fiber, not the loop. The child gets the descriptors
    0, 1 and 2 asked for and no other (every descriptor Braid creates is
    close-on-exec), no signal blocked, and every signal at its default
    disposition, whatever this program set for itself (an ignored SIGPIPE, say).
    A program that cannot be started is an exception from {!spawn}, not a child
    that exits with 127.

    {b Waiting.} {!await} blocks only the calling fiber. On Linux 5.3 and later
    it waits for a pidfd ([pidfd_open]) that epoll reports readable when the
    child exits, then reaps the child with [waitpid]. Without a pidfd (an older
    kernel, or no descriptor left when the child was started) it polls [waitpid]
    on a timer, every millisecond at first and backing off to every 50 ms: a
    SIGCHLD handler would change a process-wide disposition that other code
    ([Unix.system], a library that runs commands) relies on, and such kernels
    are rare. Braid reaps each child it started, and only it must: a
    [Unix.waitpid] on [-1] elsewhere in the program would steal the status.

    {b Lifetime.} A process belongs to a {!Braid.Switch.t}. When the switch
    finishes, a child not yet reaped is killed with SIGKILL and reaped (the
    switch waits for it, this fiber only): no child outlives its switch and no
    zombie is left behind. Its pipe ends are closed with the switch too. To let
    a program run longer, spawn it on a longer-lived switch. A child that cannot
    be killed (a set-user-ID program: [EPERM]) fails the switch with
    {!Braid_io.Io_error} and is left running.

    {b Cancellation.} Cancelling a fiber blocked in {!await} wakes it at once
    with {!Braid.Cancelled}; the process keeps running and can be awaited again.
    Since a cancelled switch then finishes, the usual effect of cancelling or
    timing out the code that owns the switch is that the process is killed:
    {[
      let make_for_5s () =
        Time.timeout 5. (fun () ->
            Switch.run @@ fun sw -> Process.await (Process.spawn ~sw "make" []))
      (* None: make was killed after 5 s *)
    ]}

    {b Threads.} {!await}, {!status}, {!signal} and {!kill} must be called from
    a fiber of the loop that spawned the process ([Invalid_argument] otherwise);
    the pipe ends are {!Fd.t}s of that loop. *)

type t
(** A child process started by {!spawn}. *)

type stdio = [ `Inherit | `Null | `Pipe | `Fd of Unix.file_descr ]
(** What one of the child's standard descriptors is connected to:
    - [`Inherit]: the same as this program's;
    - [`Null]: [/dev/null];
    - [`Pipe]: a new channel whose other end this program gets as a Braid
      {!Fd.t} ({!stdin}, {!stdout}, {!stderr}), read and written without
      blocking the loop. It is a Unix-domain stream socket pair rather than a
      pipe, so that writing to a child that has exited fails with [EPIPE]
      instead of raising SIGPIPE in this program (Node.js does the same); the
      child sees a socket, which programs treat like a pipe;
    - [`Fd fd]: a duplicate of [fd], which stays the caller's to close. Giving
      the descriptor of a {!Fd.t} also gives its non-blocking mode, which most
      programs do not expect: prefer [`Pipe]. *)

val spawn :
  sw:Braid.Switch.t ->
  ?env:string array ->
  ?cwd:string ->
  ?stdin:stdio ->
  ?stdout:stdio ->
  ?stderr:stdio ->
  string ->
  string list ->
  t
(** [spawn ~sw prog args] starts [prog] with arguments [args] ([prog] itself is
    its [argv.(0)]). Without a slash, [prog] is looked up in the directories of
    this program's [PATH], as [execvp] does; with one, it is a path (relative to
    [cwd] if given). [env] is the child's whole environment, as ["NAME=value"]
    strings (default: this program's); [cwd] is the directory the child starts
    in (default: this program's). [stdin], [stdout] and [stderr] default to
    [`Inherit]. The process is killed and reaped when [sw] finishes if it has
    not been reaped by then.

    Blocks only the calling fiber, for the time the kernel takes to start the
    program on a {!Blocking} pool thread (see above), never waiting for the
    child to run; that wait is not interrupted by cancellation.

    Raises {!Braid_io.Io_error}
    [{op = "posix_spawn"; error = err; detail = prog}] if the program cannot be
    started: [ENOENT] if it does not exist (or [cwd] does not), [EACCES] if it
    is not executable, and so on. Raises {!Braid_io.Io_error} if the pipes
    cannot be made ([EMFILE], say). Raises [Invalid_argument] if a string holds
    a NUL byte, if [sw] has finished, or outside a fiber of {!Braid_io.run}. *)

val pid : t -> int
(** The child's process id. Once the process is reaped the id may name another
    process: use {!signal}, which knows. *)

val stdin : t -> Fd.t
(** [stdin p] is this program's end of the child's standard input, if it was
    spawned with [~stdin:`Pipe]: write to it, and {!Fd.close} it to signal the
    end of input. It belongs to the switch of {!spawn}.

    Raises [Invalid_argument] if the child's [stdin] is not [`Pipe]. *)

val stdout : t -> Fd.t
(** [stdout p] is this program's end of the child's standard output, if it was
    spawned with [~stdout:`Pipe]: reading it gives what the child writes, then
    end of file once the child (and any process that inherited the descriptor)
    has closed it or exited.

    Raises [Invalid_argument] if the child's [stdout] is not [`Pipe]. *)

val stderr : t -> Fd.t
(** Like {!stdout}, for the child's standard error.

    Raises [Invalid_argument] if the child's [stderr] is not [`Pipe]. *)

val await : t -> Unix.process_status
(** [await p] waits for the child to exit, reaps it, and returns how it ended:
    [WEXITED code], or [WSIGNALED signal] (an OCaml signal number such as
    [Sys.sigkill]). Blocks only the calling fiber; returns at once if the child
    was already reaped, with the same status every time. Several fibers may
    await one process.

    Raises [Braid.Cancelled] if the fiber is cancelled while waiting (woken at
    once; the process keeps running and may be awaited again). Raises
    {!Braid_io.Io_error} [{op = "waitpid"; error = ECHILD; detail = ""}] if
    something else in this program reaped the child. Raises [Invalid_argument]
    from a fiber of another loop. *)

val status : t -> Unix.process_status option
(** [status p] is [Some] the exit status if the child has exited (it is then
    reaped), [None] if it is still running. Never blocks.

    Raises {!Braid_io.Io_error} and [Invalid_argument] as {!await}. *)

val signal : t -> int -> unit
(** [signal p s] sends signal [s] (an OCaml signal number: [Sys.sigterm], ...)
    to the child if it has not been reaped, and does nothing if it has: a reaped
    child's id may already name another process. Never blocks.

    Raises {!Braid_io.Io_error} if [kill(2)] fails (e.g. [EINVAL] for a bad
    signal), and [Invalid_argument] from a fiber of another loop. *)

val kill : t -> unit
(** [kill p] is [signal p Sys.sigkill]. {!await} then returns
    [WSIGNALED Sys.sigkill], unless the child exited first. *)

val output :
  ?env:string array ->
  ?cwd:string ->
  ?input:string ->
  string ->
  string list ->
  Unix.process_status * string
(** [output prog args] runs [prog] to completion and returns its exit status and
    everything it wrote to its standard output. Its standard input is [input]
    (written by a fiber of its own, then closed; what the child does not read is
    dropped) or [/dev/null]; its standard error is this program's. [env] and
    [cwd] are as for {!spawn}. Blocks only the calling fiber, except while
    starting the program (see {!spawn}).

    Raises [Braid.Cancelled] if the fiber is cancelled: the child is then killed
    and reaped before [output] returns. Raises {!Braid_io.Io_error} and
    [Invalid_argument] as {!spawn} and {!await}. *)

val spawn_detached :
  ?env:string array ->
  ?cwd:string ->
  fds:Unix.file_descr list ->
  string ->
  string list ->
  int
(** [spawn_detached ~fds prog args] starts [prog] as {!spawn} does and returns
    its pid, which is the caller's to reap ([Unix.waitpid]): no switch kills it,
    no pipe is made. The child's descriptor [i] is a duplicate of the [i]th of
    [fds] (3 to 16 of them: its standard input, output and error, then any it is
    given, such as listening sockets), and it has no other: the duplicates are
    made in the child alone, so a process another thread starts meanwhile
    inherits none of them. For a program that must outlive this one's switches
    (a successor taking over a server's sockets). Blocks only the calling fiber
    (see {!spawn}). Raises as {!spawn}, and [Invalid_argument] for fewer than 3
    or more than 16 descriptors. *)
