(** What the server logs, and how any code under a server logs.

    The events are structured values ({!event}); {!emit} hands one to the
    logging service in force ({!Services.val-log}), whose implementation decides
    what to keep and how to write it: [Braid_server.Real_services] filters by
    level and writes through a [Braid_server.Log_writer], {!In_memory} keeps
    every event for a test. Callable from the request handler's fiber, from
    fibers it forks and from pool tasks it submits: their events reach the same
    log.
    {[
      let handler (_ : Handler.request) =
        Log.info "computing";
        Response.string "computed\n"
    ]} *)

include module type of struct
  include Log_event
end

val emit : event -> unit
(** [emit e] is {!Services.val-log} [e].

    Raises [Invalid_argument] outside {!Services.run}. *)

val message : level -> string -> unit
(** [message level text] emits [Message] with the services' current time. *)

val error : string -> unit
val warning : string -> unit
val info : string -> unit
val debug : string -> unit

(** The id of the request a fiber works for, which every log line of the request
    carries: the access and error logs of [Braid_server] print it, and the
    trace's request events name it (docs/tracing.md).

    The server binds it ({!Request_id.with_id}) in the fiber context of the
    connection fiber for each request, so it follows the handler into the fibers
    it forks, the pool tasks it submits and the Lwt code it calls through
    [braid_lwt], like any {!Braid.Fiber.val-with_binding}.
    {[
      let handler (_ : Handler.request) =
        let id =
          match Log.Request_id.current () with
          | Some id -> Log.Request_id.to_string id
          | None -> "none"
        in
        Response.string ("request " ^ id ^ "\n")
    ]} *)
module Request_id : sig
  type t
  (** A W3C trace id: 32 lowercase hexadecimal digits, never all zero. *)

  val of_traceparent : string -> (t, string) result
  (** [of_traceparent value] is the trace id of a W3C [traceparent] header value
      ([00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01]), or why it is
      not one. *)

  val generate : unit -> t
  (** [generate ()] is a fresh id: 16 random hexadecimal digits drawn once per
      process, then a per-domain counter. Not secret, not unguessable: an id,
      not a token. Any domain; never blocks. *)

  val of_request : Braid_http.Request.t -> t
  (** [of_request req] is the trace id of [req]'s [traceparent] header if it has
      a valid one, else {!generate}[ ()]. *)

  val to_string : t -> string
  (** The 32 hexadecimal digits. *)

  val current : unit -> t option
  (** [current ()] is the id bound for the calling fiber (or thread), if any.
      Never blocks. *)

  val with_id : t -> (unit -> 'a) -> 'a
  (** [with_id id f] runs [f ()] with [id] bound for the caller and everything
      it starts. *)

  val with_id_in : Braid.Fiber.t -> t -> (unit -> 'a) -> 'a
  (** [with_id_in fiber id f] is {!with_id}[ id f] for a caller that knows it
      runs as [fiber] (the server's connection fiber, looked up once per
      connection): it performs no effect to find it, once per request. [fiber]
      must be the calling fiber ({!Braid.Private.Fiber.with_binding_in}). *)

  val echo : ?header:string -> Handler.t -> Handler.t
  (** [echo handler] is [handler] with the current id added to its responses in
      a [header] field (default [X-Request-Id]): global middleware for clients
      and proxies that correlate their logs with the server's. *)
end
