(** The two halves of systemd's protocol a server needs, without libsystemd:
    listening sockets passed by socket activation, and state notifications.

    {b Socket activation} ([sd_listen_fds(3)]): systemd (or Debian's
    [systemd-socket-activate], or any parent following the protocol) opens the
    listening sockets, starts the server with them as descriptors 3, 4, ... and
    says so in [LISTEN_PID], [LISTEN_FDS] and [LISTEN_FDNAMES]. The server then
    never binds: a restart or a hand-over to a new binary leaves the sockets
    open, and connections arriving meanwhile wait in their backlog instead of
    being refused.

    {b Notifications} ([sd_notify(3)]): with [Type=notify], systemd waits for
    [READY=1] before it counts the service as started, and shows [RELOADING=1]
    and [STOPPING=1]. They are datagrams to the Unix socket named by
    [NOTIFY_SOCKET]; nothing is sent when it is unset.

    Any thread; never blocks (a notification is one non-blocking [sendto]). *)

type listener = { fd : Unix.file_descr; name : string }
(** A socket the parent passed: its descriptor and its [FileDescriptorName=]
    (["unknown"] if none was given, as systemd does). *)

val listeners : unit -> (listener list, string) result
(** [listeners ()] are the sockets passed to this process, in order; [[]] if
    none were (no [LISTEN_FDS], or a [LISTEN_PID] naming another process: the
    variables were meant for a parent). The descriptors are made close-on-exec.
    [Error] explains a malformed [LISTEN_FDS] or a descriptor that is not open.
*)

val notify : string -> (unit, string) result
(** [notify state] sends [state] (e.g. ["READY=1"], several assignments
    separated by newlines) to [NOTIFY_SOCKET], a path or, with a leading [@], an
    abstract socket name; [Ok ()] without sending if it is unset. [Error] says
    why the datagram could not be sent: systemd treats notifications as
    advisory, and so may the caller. *)
