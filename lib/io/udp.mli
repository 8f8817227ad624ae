(** Direct-style UDP sockets over IPv4 and IPv6: datagrams sent to, and received
    from, addresses.

    {[
      let udp_echo () =
        Braid_io.run @@ fun () ->
        Switch.run @@ fun sw ->
        let socket = Udp.bind ~sw (Udp.addr "127.0.0.1" 5353) in
        let buf = Bytes.create 1500 in
        while true do
          let got = Udp.receive_from socket buf 0 1500 in
          Udp.send_to socket got.source buf 0 got.length
        done
    ]}

    A UDP socket belongs to the event loop of the fiber that created it and to a
    {!Braid.Switch.t} that closes it when it finishes, like a {!Net.socket}. Its
    operations must be called from fibers of that loop ([Invalid_argument]
    otherwise), except {!close}, which may be called from anywhere. They block
    only the calling fiber: {!receive_from} suspends it until a datagram
    arrives, {!send_to} while the socket's send buffer is full, and the loop
    runs the other fibers meanwhile. Several fibers may send and receive on one
    socket at once; each datagram goes to one receiver.

    Cancelling a fiber blocked in {!receive_from} or a send wakes it at once
    with {!Braid.Cancelled} and removes its registration; closing the socket
    wakes the fibers blocked on it with {!Error} [EBADF].

    A separate type from {!Net.socket}: stream operations ({!Net.read_into},
    {!Net.write_all}) would lose datagram boundaries and addresses. A UDP socket
    is still a descriptor: [(s :> Fd.t)] gives {!Fd.await_readable} and friends.
*)

type socket = private Fd.t

exception Error of { op : string; error : Unix.error; detail : string }
(** {!Braid_io.Io_error} (and {!Net.Error}, {!Fd.Error}), with [detail = ""]:
    [op] names the failed operation (["bind"], ["create"], ["connect"],
    ["send_to"], ["send"], ["receive_from"], ["getsockname"], ["close"]) and
    [error] the reason, e.g. [EADDRINUSE] for [bind], [EMSGSIZE] for a datagram
    too large to send, [ECONNREFUSED] on a connected socket whose peer's port is
    closed (an ICMP error reported by the next send or receive), [EBADF] for a
    socket closed before or during the operation. [EINTR] and [EAGAIN] never
    surface. *)

type family = [ `Ipv4 | `Ipv6 ]

val addr : string -> int -> Unix.sockaddr
(** [addr ip port] is a UDP address, the same value as {!Net.tcp}[ ip port]:
    [ip] is an IPv4 or IPv6 literal. Host names are resolved by {!Net.resolve},
    whose addresses serve UDP as well.

    Raises [Invalid_argument] if [ip] is not a literal address. *)

(** {1 Sockets} *)

val bind :
  sw:Braid.Switch.t ->
  ?reuse_addr:bool ->
  ?reuse_port:bool ->
  Unix.sockaddr ->
  socket
(** [bind ~sw addr] is a UDP socket bound to [addr] (an IPv4 or IPv6 address,
    e.g. [addr "::1" 0]), closed when [sw] finishes. With port 0 the kernel
    picks a port: {!local_addr} tells which. [reuse_addr] (default [false]) sets
    [SO_REUSEADDR], [reuse_port] (default [false]) [SO_REUSEPORT], so that
    several sockets, one per domain's loop say, share the address and the kernel
    spreads datagrams among them. An IPv6 socket bound to [::] also receives
    IPv4 datagrams (as IPv4-mapped addresses) unless the system says otherwise
    ([net.ipv6.bindv6only]). Does not block.

    Raises [Invalid_argument] for a Unix-domain address, or outside a fiber of
    {!Braid_io.run}.
    @raise Error [{op = "bind"; _}] e.g. [EADDRINUSE], [EADDRNOTAVAIL]. *)

val create : sw:Braid.Switch.t -> family -> socket
(** [create ~sw family] is an unbound UDP socket of [family], to send from: the
    kernel binds it to an ephemeral port of the wildcard address ([0.0.0.0] or
    [::]) at its first send, after which it receives the replies. Closed when
    [sw] finishes. Does not block.

    Raises [Invalid_argument] outside a fiber of {!Braid_io.run}.
    @raise Error [{op = "create"; _}] e.g. [EMFILE]. *)

val connect : socket -> Unix.sockaddr -> unit
(** [connect s peer] fixes [s]'s peer: {!send} sends to it, and [s] receives
    datagrams from [peer] only. No packet is exchanged, so this does not block
    and succeeds whether or not anyone listens at [peer]; a closed port shows
    later as [ECONNREFUSED] from a send or receive. Connecting again changes the
    peer.
    @raise Error
      [{op = "connect"; _}] e.g. [EAFNOSUPPORT] for an address of the other
      family. *)

(** {1 Datagrams} *)

val send_to : socket -> Unix.sockaddr -> bytes -> int -> int -> unit
(** [send_to s addr buf off len] sends the [len] bytes of [buf] at [off] as one
    datagram to [addr], waiting (this fiber only) while the socket's send buffer
    is full. A datagram goes whole or not at all; delivery is not guaranteed
    (UDP). An empty datagram ([len = 0]) is a datagram.

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error
      [{op = "send_to"; _}] e.g. [EMSGSIZE] for more than the protocol allows
      (65,507 bytes over IPv4), [EAFNOSUPPORT] for an address of the other
      family. (A connected socket may still send to another address; the replies
      are filtered out.)
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; nothing was sent. *)

val send : socket -> bytes -> int -> int -> unit
(** [send s buf off len] is {!send_to} to the peer set by {!connect}.
    @raise Error
      [{op = "send"; _}] e.g. [EDESTADDRREQ] if [s] is not connected,
      [ECONNREFUSED] if an earlier datagram found the peer's port closed.
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; nothing was sent. *)

type received = {
  length : int;  (** Bytes of the datagram stored in the buffer. *)
  truncated : bool;
      (** The datagram was longer than the buffer: its first [length] bytes were
          stored and the rest is lost. *)
  source : Unix.sockaddr;  (** The sender. *)
}

val receive_from : socket -> bytes -> int -> int -> received
(** [receive_from s buf off len] takes the next datagram that arrives at [s],
    waiting (this fiber only) until one does, and stores its first [len] bytes
    at [off] in [buf]. A datagram longer than [len] is cut to [len] bytes
    ([truncated] says so: its tail cannot be read later), so give a buffer as
    large as the largest datagram expected. A connected socket receives from its
    peer only.

    Raises [Invalid_argument] if [off] and [len] are not a valid range.
    @raise Error
      [{op = "receive_from"; _}] e.g. [EBADF] if [s] is closed before or while
      waiting, [ECONNREFUSED] on a connected socket after a datagram found the
      peer's port closed.
    @raise Braid.Cancelled
      if the fiber is cancelled while waiting; no datagram was taken. *)

(** {1 Closing and addresses} *)

val close : socket -> unit
(** [close s] is {!Fd.close}: idempotent; wakes fibers blocked on [s] with
    {!Error} [EBADF]; removes [s] from epoll.
    @raise Error [{op = "close"; _}] if [close(2)] reports an error. *)

val local_addr : socket -> Unix.sockaddr
(** The address the socket is bound to (port 0 until an unbound socket first
    sends).
    @raise Error [{op = "getsockname"; _}] e.g. [EBADF]. *)
