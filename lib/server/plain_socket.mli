(** Plain socket connections: the transport the pipeline reads and writes
    through ([read]/[write] on the socket, [await_input] on the loop's epoll,
    files by sendfile(2)), and the life of a connection between its accept and
    its close: served in a fiber, parked with none ({!Parking}) between
    requests, resumed by whichever fiber takes it. In fibers of the loop that
    owns the registry. Internal. *)

type worker = {
  fiber : Braid.Fiber.t;
  services : Braid_web.Services.t option;
      (** The services in force in [fiber], if known: a connection with others
          gets its own installed around its pipeline. *)
}
(** A fiber that serves plain connections in turn (its own, then woken ones). *)

val serve :
  Registry.context -> Config.t -> Braid_io.Net.socket -> Unix.sockaddr -> unit
(** See {!Connection.serve}. *)

val resume : Registry.context -> Registry.plain -> worker:worker -> unit
(** [resume c p ~worker] serves the woken parked connection [p] in [worker]'s
    fiber (the caller's), then others woken, as {!serve} does after its own.
    @raise Braid.Cancelled if the fiber is cancelled. *)
