(** Direct-style TCP and Unix-domain stream sockets, and host name resolution.

    Every socket belongs to the event loop of the fiber that created it and to a
    {!Braid.Switch.t} that closes it when it finishes. Operations block only the
    calling fiber: a socket is non-blocking, and an operation that would block
    suspends the fiber until epoll says the socket is ready, while the loop runs
    the other fibers. They must be called from fibers of the owning loop
    ([Invalid_argument] otherwise); {!close} may be called from anywhere.

    Cancelling a fiber blocked in {!accept}, {!connect}, {!read_into},
    {!write_all}, {!write_more} or {!sendfile} wakes it at once with
    {!Braid.Cancelled} and removes its registration; closing a socket wakes the
    fibers blocked on it with {!Error} ([EBADF]).
    {[
      let echo_server () =
        Braid_io.run @@ fun () ->
        Switch.run @@ fun sw ->
        let listener = Net.listen ~sw (Net.tcp "127.0.0.1" 8080) in
        while true do
          Net.accept_fork ~sw listener ~on_error:raise (fun client _addr ->
              let buf = Bytes.create 4096 in
              let rec echo () =
                match Net.read_into client buf 0 4096 with
                | 0 -> ()
                | n ->
                    Net.write_all client buf 0 n;
                    echo ()
              in
              echo ())
        done
    ]} *)

type socket = Fd.t
(** A socket is a descriptor: {!Fd.await_readable} and friends apply. *)

exception Error of { op : string; error : Unix.error; detail : string }
(** {!Braid_io.Io_error} (and {!Fd.Error}), with [detail = ""]: [op] names the
    failed operation (["listen"], ["accept"], ["connect"], ["read"], ["write"],
    ["sendfile"], ["shutdown"], ["close"], ...) and [error] the reason, e.g.
    [ECONNREFUSED] for [connect], [ECONNRESET] for [read], [EPIPE] for [write]
    to a closed peer, [EBADF] for a socket closed before or during the
    operation. [EINTR] and [EAGAIN] never surface. *)

(** {1 Addresses} *)

val tcp : string -> int -> Unix.sockaddr
(** [tcp ip port] is a TCP address; [ip] is an IPv4 or IPv6 literal
    (["127.0.0.1"], ["::1"], ["0.0.0.0"]). For a host name, see {!resolve} and
    {!connect_host}.

    Raises [Invalid_argument] if [ip] is not a literal address. *)

val unix_path : string -> Unix.sockaddr
(** [unix_path path] is a Unix-domain socket address. *)

(** {1 Servers} *)

val listen :
  sw:Braid.Switch.t ->
  ?backlog:int ->
  ?reuse_addr:bool ->
  ?reuse_port:bool ->
  Unix.sockaddr ->
  socket
(** [listen ~sw addr] is a socket bound to [addr] and listening, closed when
    [sw] finishes. Does not block. [backlog] defaults to 4096 (the kernel caps
    it at [net.core.somaxconn]); [reuse_addr] (default [true], TCP only) sets
    [SO_REUSEADDR]; [reuse_port] (default [false]) sets [SO_REUSEPORT], so that
    several sockets, typically one per domain's loop, can listen on the same
    address and the kernel spreads connections among them (see
    {!Braid_io.run_domains}). With port 0 the kernel picks a port: {!local_addr}
    tells which. A Unix-domain path must not exist yet.
    @raise Error [{op = "listen"; _}] e.g. [EADDRINUSE]. *)

val accept : sw:Braid.Switch.t -> socket -> socket * Unix.sockaddr
(** [accept ~sw listener] waits (this fiber only) for a connection and returns
    it with the peer's address; the new socket is closed when [sw] finishes.
    Several fibers may accept on one listener.

    Closing the socket ({!close}) takes it back from [sw], so a server accepting
    forever on one switch keeps nothing of the connections it has closed;
    {!accept_fork} closes each connection when its handler ends.
    @raise Error [{op = "accept"; _}] e.g. [EMFILE].
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

val accept_unowned : socket -> socket * Unix.sockaddr
(** [accept_unowned listener] is {!accept} for a connection that belongs to no
    switch and may outlive the fiber that accepted it (a server whose idle
    connections wait with no fiber, {!Fd.watch_input}): the caller must {!close}
    it; the loop closes it if it is still open when the loop ends.
    @raise Error [{op = "accept"; _}]
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

val accept_fork :
  sw:Braid.Switch.t ->
  on_error:(exn -> unit) ->
  socket ->
  (socket -> Unix.sockaddr -> unit) ->
  unit
(** [accept_fork ~sw ~on_error listener handle] waits for a connection, then
    runs [handle client addr] in a new fiber of [sw] and returns. [client] is
    closed as soon as [handle] returns or raises, so memory stays flat however
    many connections [sw] serves. If [handle] raises (other than by cancellation
    of [sw]) or closing fails, [on_error] gets the exception; if [on_error]
    raises, [sw] fails.
    @raise Error [{op = "accept"; _}]
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

(** {1 Clients} *)

val connect : sw:Braid.Switch.t -> Unix.sockaddr -> socket
(** [connect ~sw addr] connects to [addr], waiting (this fiber only) for the
    connection to be established; the socket is closed when [sw] finishes. A
    Unix-domain server with a full backlog is retried every millisecond.
    @raise Error [{op = "connect"; _}] e.g. [ECONNREFUSED], [ENOENT].
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting (the socket is then closed). *)

(** {1 Host names}

    Name resolution runs [getaddrinfo(3)] (which reads [/etc/hosts], asks name
    servers, and so on, as [/etc/nsswitch.conf] says) on a {!Blocking} pool,
    never on the loop: only the calling fiber waits. A fiber cancelled while its
    lookup runs is woken at once with {!Braid.Cancelled}; the lookup finishes on
    its pool thread and its result is dropped. *)

exception Unknown_host of string
(** [Unknown_host name]: [name] resolved to no address. [getaddrinfo] as the
    [Unix] library exposes it gives no reason, so a name that does not exist and
    a name server that cannot be reached both end here. *)

val getaddrinfo :
  ?pool:Blocking.t ->
  string ->
  string ->
  Unix.getaddrinfo_option list ->
  Unix.addr_info list
(** [getaddrinfo ~pool host service options] is
    [Unix.getaddrinfo host service options] run on [pool] (default
    {!Blocking.current}[ ()]): the addresses for [host] and [service] (a port
    number or a service name such as ["https"]), in the order the resolver
    prefers, [[]] if there is none. Suspends only the calling fiber; from any
    Braid scheduler, or a bare thread, which it blocks.
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting (woken at once; the lookup
      finishes on its thread). *)

val resolve : ?pool:Blocking.t -> string -> int -> Unix.sockaddr list
(** [resolve ~pool host port] is the IPv4 and IPv6 addresses of [host] with
    [port], in the order the resolver prefers (usually IPv6 first where the
    machine has IPv6 routes), without duplicates; for TCP and UDP alike. An IP
    literal (["127.0.0.1"], ["::1"]) is its own address, with no lookup. Else
    the lookup runs as {!getaddrinfo}'s, on [pool]: only the calling fiber
    waits.

    Raises [Invalid_argument] if [port] is not in 0 .. 65535.
    @raise Unknown_host if [host] has no address.
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting (woken at once; the lookup
      finishes on its thread). *)

val connect_any :
  sw:Braid.Switch.t -> ?attempt_timeout:float -> Unix.sockaddr list -> socket
(** [connect_any ~sw addrs] tries {!connect} to each address of [addrs] in turn
    and returns the first connection made; the sockets of failed attempts are
    closed. One address at a time (no Happy Eyeballs race of IPv6 against IPv4):
    an address that drops packets holds the next ones up until its attempt
    fails, so give [attempt_timeout], in seconds, to bound each attempt
    (default: none, the kernel's own limit of about two minutes).

    Raises [Invalid_argument] if [addrs] is empty.
    @raise Error
      [{op = "connect"; _}] of the last address if none could be reached (the
      earlier errors are dropped); [ETIMEDOUT] for an attempt that took longer
      than [attempt_timeout].
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting (no further address is tried). *)

val connect_host :
  sw:Braid.Switch.t ->
  ?pool:Blocking.t ->
  ?attempt_timeout:float ->
  string ->
  int ->
  socket
(** [connect_host ~sw host port] is {!connect_any} to the addresses
    {!resolve}[ host port] finds: a TCP connection to [host] by name (or IP
    literal). Suspends only the calling fiber, while it resolves and while it
    connects.

    Raises [Invalid_argument] if [port] is not in 0 .. 65535.
    @raise Unknown_host if [host] has no address.
    @raise Error
      [{op = "connect"; _}] if no address of [host] could be reached, as
      {!connect_any}.
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

(** {1 Data} *)

val read_into : socket -> bytes -> int -> int -> int
(** [read_into s buf off len] reads at most [len] bytes into [buf] at [off],
    waiting (this fiber only) until some are available; [0] means the peer
    closed its side (or [len = 0]). Like every read and write of a socket, it
    first yields if the fiber has started {!Fd.io_budget} of them in a row
    without waiting (fairness).

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error [{op = "read"; _}] e.g. [ECONNRESET].
    @raise Braid.Cancelled if the fiber is cancelled while waiting. *)

val write_all : socket -> bytes -> int -> int -> unit
(** [write_all s buf off len] sends the [len] bytes of [buf] at [off], waiting
    (this fiber only) while the socket's buffer is full.

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error [{op = "write"; _}] e.g. [EPIPE], [ECONNRESET].
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; part of the data may have been
      sent. *)

val write_string : socket -> string -> unit
(** [write_string s str] sends all of [str], as {!write_all}. *)

val write_more : socket -> bytes -> int -> int -> unit
(** [write_more s buf off len] is {!write_all} telling the kernel that more
    follows ([MSG_MORE]): the bytes wait in the socket until the next write or
    {!sendfile} on [s] completes a packet (or for at most 200 ms), instead of
    leaving alone in a short packet. For a response head followed by its body.

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error [{op = "write"; _}] e.g. [EPIPE], [ECONNRESET].
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; part of the data may have been
      sent. *)

val sendfile : socket -> Unix.file_descr -> off:int -> len:int -> int
(** [sendfile s file ~off ~len] sends the [len] bytes of [file] from offset
    [off] to [s] with sendfile(2), the kernel copying them from the page cache
    without passing through this process, and waiting (this fiber only) while
    the socket's buffer is full. It returns how many bytes were sent: [len], or
    fewer if [file] ended first (it shrank meanwhile; a caller that promised
    [len] bytes should close the connection). [file]'s own offset is neither
    used nor moved, so several fibers may send one descriptor at once.

    [file] is typically a regular file, whose pages not in memory are read from
    the disk during the call: that blocks the calling domain (the runtime lock
    is released meanwhile, so other threads run), as reading the file would. [s]
    may be a pipe too.

    Raises [Invalid_argument] if [off] or [len] is negative.
    @raise Error
      [{op = "sendfile"; _}] e.g. [EPIPE] or [ECONNRESET] from the peer;
      [EINVAL] or [ENOSYS] when the kernel cannot send from [file] to [s] (not a
      file it can map, or a descriptor not open for reading): checked before any
      byte moves, it leaves the caller free to send the bytes by {!write_all}
      instead; [EBADF] if [s] is or gets closed.
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; part of the file may have been
      sent. *)

val shutdown : socket -> Unix.shutdown_command -> unit
(** [shutdown s cmd] shuts down one or both directions ([SHUTDOWN_SEND] makes
    the peer read end-of-file). Does not block.
    @raise Error [{op = "shutdown"; _}] e.g. [ENOTCONN]. *)

val close : socket -> unit
(** [close s] is {!Fd.close}: idempotent; wakes fibers blocked on [s] with
    {!Error} [EBADF]; removes [s] from epoll. *)

val local_addr : socket -> Unix.sockaddr
(** The address the socket is bound to.
    @raise Error [{op = "getsockname"; _}] *)

val peer_addr : socket -> Unix.sockaddr
(** The address of the peer.
    @raise Error [{op = "getpeername"; _}] *)
