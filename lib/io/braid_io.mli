(** Braid's IO scheduler: an epoll event loop on the calling domain, with
    direct-style networking (TCP, Unix-domain, UDP, host names), files and
    directories, child processes, timers, timeouts and signals.

    {[
      let main serve =
        Braid_io.run @@ fun () ->
        Switch.run @@ fun sw ->
        let listener = Net.listen ~sw (Net.tcp "127.0.0.1" 8080) in
        while true do
          Net.accept_fork ~sw listener ~on_error:ignore (fun client _ ->
              match Time.timeout 30. (fun () -> serve client) with
              | Some () -> ()
              | None -> prerr_endline "client timed out")
        done
    ]}

    Each connection is a cheap fiber written in direct style: a read that would
    block suspends the fiber (through {!Braid.suspend}, like every Braid
    structure), and the loop runs the other fibers until epoll says the socket
    is ready. So Braid's promises, channels, mutexes and switches all work
    inside IO fibers, and a pool worker on another domain can fill a promise an
    IO fiber awaits: the loop is woken through an eventfd.

    Structured concurrency is {!Braid.Switch} (re-exported as {!Switch}):
    sockets belong to a switch, which closes them when it finishes; failures
    cancel sibling fibers; cancelling a fiber blocked in [accept], [read],
    [write], [connect] or [sleep] wakes it at once and removes its epoll or
    timer registration. Eio calls the same design [Eio_linux]; Lwt's is
    [Lwt_unix] with monadic code.

    Files ({!File}, {!Path}) and other calls that block ({!Blocking}) run on a
    pool of threads on a domain of their own, and likewise block only the
    calling fiber.

    Linux only (epoll, or io_uring: {!type-backend}; eventfd). *)

module Switch = Braid.Switch
module Fiber = Braid.Fiber
module Fd = Fd
module Net = Net
module Udp = Udp
module Time = Time
module Signal = Signal
module Process = Process
module Blocking = Blocking
module Buf_read = Buf_read
module File = File
module Path = Path
module File_access = File_access

(** {1 Errors} *)

exception Io_error of { op : string; error : Unix.error; detail : string }
(** The one exception braid.io's modules raise when the system refuses an
    operation, and braid.tls's when TLS fails (Eio's [Io], Unix's [Unix_error]):
    - [op] names the operation: ["read"], ["write"], ["accept"], ["connect"],
      ["sendfile"] ({!Fd}, {!Net}, {!Udp}); the system call for files, paths and
      processes (["open"], ["pread"], ["stat"], ["rename"], ["posix_spawn"],
      ["waitpid"], ["kill"]); ["handshake"], ["read"] or ["write"] for TLS.
    - [error] says why, as [errno] does. Using a closed descriptor or file, or
      closing a descriptor while a fiber waits on it, is [EBADF]. A TLS failure
      (a failed handshake, a corrupt record, a peer's alert, a peer gone
      mid-handshake) is [EPROTO] ([Braid_tls.eproto]: [Unix.error] has no
      constructor for it), which a TCP socket itself never reports.
    - [detail] is what else is known, or [""]: the path a file or path call
      acted on, the program a spawn could not start, OpenSSL's reason for a TLS
      failure. Sockets have none.

    [EINTR] and [EAGAIN] never surface: they are retried or waited out.
    {!Fd.Error}, {!Net.Error} and {!Udp.Error} are this exception under older
    names. Failures that are no system call's stay apart: cancellation
    ({!Braid.Cancelled}), misuse ([Invalid_argument]), a host name without
    address ({!Net.Unknown_host}), an end of stream ([End_of_file] where a
    function says so), a line too long ({!Buf_read.Too_long}), and the raw
    {!Private.Epoll}, which raises [Unix.Unix_error] as [Unix] does.
    {[
      let first_line path =
        match Path.load path with
        | data -> Some (List.hd (String.split_on_char '\n' data))
        | exception Io_error { error = Unix.ENOENT; _ } -> None
    ]} *)

val error_message : exn -> string option
(** [error_message e] is [Some "op: reason (detail)"] if [e] is {!Io_error},
    e.g. ["open: No such file or directory (/etc/missing)"] or
    ["read: Connection reset by peer"] (no parentheses when [detail] is empty),
    and [None] for any other exception. [Printexc.to_string] prints {!Io_error}
    as ["Braid_io.Io_error(...)"] around the same text. *)

(** {1 Running loops} *)

(** What a loop waits in. Both wait for readiness, edge-triggered, and run the
    same code around it: every function of this library behaves the same over
    either (docs/io.md, Backends, says what each costs).
    - [Epoll]: [epoll_wait], a descriptor registered with [epoll_ctl] when it is
      created and removed when it is closed.
    - [Uring]: an io_uring ring (Linux 5.11 or later) with a multishot poll per
      descriptor; registrations and removals are queued in the ring and
      submitted with the loop's next wait, and a look for events that need not
      wait reads the ring without a system call. *)
type backend = Epoll | Uring

val backend_of_string : string -> backend option
(** [backend_of_string s] is [Some Epoll] for ["epoll"], [Some Uring] for
    ["uring"] (or ["io_uring"]), else [None]. *)

val string_of_backend : backend -> string
(** ["epoll"] or ["uring"]. *)

val run : ?backend:backend -> (unit -> 'a) -> 'a
(** [run main] runs an event loop on the calling domain (and systhread), with
    [main] as its first fiber, and returns [main]'s result once every fiber
    forked in the loop has finished. Descriptors still open then are closed.

    Failures are never lost: if [main] raised, or a forked fiber raised and was
    never joined, [run] re-raises it after all fibers finished
    ({!Braid.Fiber.Multiple} if several did).

    The loop's thread blocks SIGPIPE while [run] runs (sendfile(2) has no
    [MSG_NOSIGNAL]): a write to a closed pipe or socket from this thread fails
    with [EPIPE] instead of killing the program.

    Fibers run one at a time on this thread. When none is runnable the loop
    sleeps in [epoll_wait] (or the ring's wait) until a descriptor is ready, a
    timer is due, a signal arrives, or a resumer on another domain or systhread
    wakes one of its fibers. Blocks the calling domain until done.

    [backend] is [BRAID_IO_BACKEND]'s (["uring"] or ["epoll"]) if omitted, and
    [Epoll] if that is unset. If [Uring] is asked for and the kernel refuses a
    ring ([ENOSYS], [EPERM] from [kernel.io_uring_disabled] or a seccomp filter,
    [ENOMEM]), the loop uses epoll, and the first such fallback in the process
    prints one line on standard error; {!val-backend} tells which one runs.
    ([BRAID_IO_URING_SIMULATE=ENOSYS] or [EPERM] makes the ring's creation fail,
    for tests.)

    Raises [Invalid_argument] if this domain already runs a loop (one loop per
    domain; start more with {!run_domains}), or if [backend] is omitted and
    [BRAID_IO_BACKEND] names no backend. *)

val backend : unit -> backend
(** [backend ()] is what the calling fiber's loop waits in: [Epoll] if it asked
    for [Uring] and fell back.

    Raises [Invalid_argument] outside a fiber of {!run}. *)

val run_domains :
  ?backend:backend -> domains:int -> (domain:int -> 'a) -> 'a list
(** [run_domains ~domains f] runs [f ~domain:i] in its own event loop on each of
    [domains] domains (each with [backend], as {!run} says), [i = 0] on the
    calling domain and the others on new domains, and returns their results in
    order of [i] once all finished. If one raises, the others are cancelled
    (their blocking calls raise {!Braid.Cancelled}) and [run_domains] re-raises
    the first failure after they all finished.

    To serve one address from every domain, each listens on it with
    [~reuse_port:true] and the kernel spreads incoming connections among them
    ([SO_REUSEPORT]). With port 0, let domain 0 bind first and publish the port
    (a {!Braid_sync.Promise} works from IO fibers):
    {[
      let main serve =
        let port = Braid_sync.Promise.create () in
        Braid_io.run_domains ~domains:4 @@ fun ~domain ->
        Switch.run @@ fun sw ->
        let addr =
          if domain = 0 then Net.tcp "127.0.0.1" 0
          else Net.tcp "127.0.0.1" (Braid_sync.Promise.await port)
        in
        let listener = Net.listen ~sw ~reuse_port:true addr in
        (if domain = 0 then
           match Net.local_addr listener with
           | ADDR_INET (_, p) -> Braid_sync.Promise.fill port p
           | ADDR_UNIX _ -> assert false);
        serve ~sw listener
    ]}
    A listener that closes drops the connections still queued on it, so stop
    accepting on all domains together (cancel, or fail one domain).

    Raises [Invalid_argument] if [domains < 1] or the calling domain already
    runs a loop. *)

(** {1 Work that may wait} *)

val yield_background : unit -> unit
(** [yield_background ()] suspends the calling fiber behind the loop's other
    work, for a fiber about to compute for a while (a fraction of a millisecond
    or more) on behalf of no one waiting yet, such as the public-key operations
    of a TLS handshake ([Braid_tls.Connection] calls it before each handshake
    step). Each turn of the loop runs the fibers that are runnable, polls
    descriptors and timers, then lets at most 4 fibers waiting here join the
    fibers that poll woke, oldest first: however many wait here, a turn does at
    most 4 such stretches, so a request that needs a few turns waits for a few
    of them, not for all. They are never starved: 4 go at every turn, whatever
    the other load (so do not use it to wait for something). Blocks only the
    calling fiber; from a fiber of {!run}, on the loop's thread.

    Raises [Invalid_argument] outside a fiber of {!run}.
    @raise Braid.Cancelled if the fiber is cancelled (woken at once). *)

(** {1 The loop as a value, and fibers that serve it}

    What a library needs to keep something per event loop (a pool of database
    connections keeps one set of connections per loop: a socket belongs to the
    loop that registered it) and to clean it up when that loop ends. *)

type loop
(** An event loop of {!run} (or of each domain of {!run_domains}). Two values
    are the same loop if and only if they are physically equal ([==]); a loop
    that has ended is never equal to a later one, even on the same domain. *)

val current_loop : unit -> loop
(** [current_loop ()] is the calling fiber's loop. Never blocks.

    Raises [Invalid_argument] outside a fiber of {!run}. *)

val fork_daemon : (unit -> unit) -> unit
(** [fork_daemon f] runs [f ()] in a new fiber of the calling fiber's loop that
    does not keep the loop running: once every other fiber of the loop has
    finished, {!run} cancels the loop's daemon fibers (their blocking calls
    raise {!Braid.Cancelled}) and returns after they have finished too. So [f]
    may wait for ever for work to do, and clean up when cancelled: a {!Switch}'s
    releases are shielded from the cancellation, and other clean-up that blocks
    goes in {!Braid.Fiber.protect}.

    {[
      let run_then_flush ~flush main =
        Braid_io.run @@ fun () ->
        Braid_io.fork_daemon (fun () ->
            Fun.protect
              ~finally:(fun () -> Braid.Fiber.protect flush)
              (fun () -> Braid_io.Time.sleep Float.infinity));
        main ()
    ]}

    The fiber belongs to no switch, and does not inherit the caller's context:
    it runs in the context {!run} was called in (the caller's handlers, a
    request's, say, would outlive their request). A daemon that fails (with
    anything but {!Braid.Cancelled} once cancelled) makes {!run} re-raise the
    failure, as an unjoined fiber's. Cancel it earlier by making [f] return:
    nothing else holds it. A daemon counts among {!val-stats}'s [fibers].
    Returns at once; the fiber starts at the loop's next turn.

    Raises [Invalid_argument] outside a fiber of {!run}. *)

(** {1 Introspection} *)

type stats = Loop.stats = {
  fibers : int;  (** Fibers of the loop not yet finished, the caller's too. *)
  open_fds : int;  (** Descriptors registered and not closed. *)
  fd_waiters : int;  (** Fibers waiting for a descriptor. *)
  timers : int;  (** Pending sleeps and timeouts. *)
  signal_waiters : int;  (** Fibers waiting for a signal. *)
}

val polls : unit -> int option
(** [polls ()] counts the times the calling thread's event loop has polled for
    events (epoll, timers), or is [None] on a thread that runs no loop. The
    fibers woken by one poll run before the next: something read from the
    outside world while the count stays the same (a file's metadata, say) can
    serve all of them, as if they had asked at the same instant. Never blocks;
    any thread. *)

val stats : unit -> stats
(** [stats ()] describes the calling fiber's loop: tests use it to check that
    cancellation leaves no registration behind.

    Raises [Invalid_argument] outside a fiber of {!run}. *)

(** {1 Internals}

    The loop's own modules (the loop, its system calls, its timer heap) are
    private to braid.io. What other libraries may use is here. *)

module Private : sig
  (** The binding to [epoll(7)] and [eventfd(2)] the loop is built on, for tests
      and for code that runs a loop of its own (the echo benchmark's raw
      baseline). Not braid.io's face: a thin binding that blocks the domain and
      raises [Unix.Unix_error], as the [Unix] library does. *)
  module Epoll : module type of struct
    include Epoll
  end
end
