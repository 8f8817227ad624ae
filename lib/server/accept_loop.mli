(** One loop's listeners and the connections accepted on them: the accept loop
    (admission through {!Admission}, a fiber per connection), and the end of the
    loop's connections at {!Server.stop}, at {!Server.shutdown} and at its
    deadline. Internal to the server. *)

type serve = Config.t -> Braid_io.Net.socket -> Unix.sockaddr -> unit
(** What serves a connection accepted on a listener: given the configuration in
    force at its accept, the socket (which it owns from then) and the peer
    (IPv4-mapped addresses unmapped, {!Address.unmapped}). It gives back what
    the connection holds (the context's [ended], {!Admission.ended}) when the
    connection ends, maybe from another fiber. *)

type shared = {
  admission : Admission.t;
  config : Config.t Atomic.t;  (** Read at each accept. *)
  metrics : Metrics.t option;  (** Counts the connections accepted. *)
  stopped : unit Braid_sync.Promise.t;
      (** Filled by {!Server.stop}: the connections are cancelled. *)
  drain : float Braid_sync.Promise.t;
      (** Filled by {!Server.shutdown} with the seconds the connections have
          left. *)
}
(** What the loops of one server share. *)

val stop : shared -> unit
(** [stop shared] fills [shared.stopped] (once; later calls do nothing). Any
    domain. *)

val serve_connections :
  shared ->
  sw:Braid_io.Switch.t ->
  (Braid_io.Net.socket * serve) list ->
  Connection.context ->
  unit
(** [serve_connections shared ~sw listeners context] accepts on each listener
    and serves each connection with the listener's [serve], in a fiber of its
    own on a switch of this loop's connections, beside the context's sweeper and
    unparker; a connection's failure is logged, never raised. It returns once
    the connections have all ended: after [shared.drain] is filled, when it
    stops accepting, closes the listeners, lets idle connections send one last
    request for {!Progress.drain_grace} (at most the deadline) and then closes
    them, and cancels the others at the deadline (filling [shared.stopped]); or
    at once after [shared.stopped] is filled, the connections cancelled. Parked
    connections are closed on the way out. Its watchers (forked on [sw]) are
    cancelled before it returns.

    Below the limit, a slot is taken before [accept] (so two loops cannot both
    take the last one). At the limit, the connection is accepted first and room
    made for it ({!Admission.make_room}). A connection over its client's cap is
    refused ({!Admission.refuse}) by a fiber of its own. Running out of
    descriptors ([EMFILE], [ENFILE], [ENOBUFS], [ENOMEM]) pauses the accept loop
    50 ms between attempts (logged once per episode); [ECONNABORTED], [EPERM]
    and unknown errors skip the connection.

    Blocks the calling fiber, which must be one of the loop of [context], with
    the loop's services in force. Raises what a listener raises other than the
    errors above, once the loop's connections are cancelled. *)
