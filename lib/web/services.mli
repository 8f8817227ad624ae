(** The server's cross-cutting services: logging, the clock (time, sleeps and
    timeouts), file access and the handler store, as one effect.

    Code that needs a service calls the functions below ({!val-log}, {!val-now},
    {!val-stat}, ...) wherever it runs: the connection pipeline, a request
    handler, a fiber the handler forked, a [Braid_pool] task it submitted. Each
    call performs an effect that the nearest {!run} answers with its record of
    implementations {!t}: [Braid_server.Real_services.services] in a server,
    {!In_memory.services} in tests (no sockets, disks or real time). Swapping
    one service is swapping one field:
    {[
      let at_time_zero handler request =
        let frozen = { (Services.current ()) with now = (fun () -> 0.) } in
        Services.run frozen (fun () -> handler request)
    ]}

    {b Services follow the fiber.} {!run} installs its handler with
    {!Braid.Fiber.with_handler}: every fiber forked inside it, and every pool
    task submitted from inside it, has the same services, on whatever domain it
    runs (the implementations must be safe there: [Braid_server.Real_services]'s
    and {!In_memory}'s are, but for sleeps and timeouts, see {!t}).

    {b Cost.} One service call is one effect: about 8 ns and 3 words (the
    continuation) on top of the implementation. Code that makes many calls can
    look the record up once ({!current}) and call it: the pipeline does so once
    per connection, since the handlers above a connection cannot change while it
    runs. *)

type t = {
  log : Log_event.event -> unit;
      (** Record an event. Must not block for long: called on every response. *)
  now : unit -> float;
      (** Wall-clock time, seconds since the epoch. Cheap: called per request.
      *)
  monotonic_ns : unit -> int;
      (** Monotonic time in nanoseconds, for deadlines: never goes back. *)
  sleep : float -> unit;
      (** [sleep seconds] suspends the calling fiber for [seconds] (of this
          clock); cancellable ({!Braid.Cancelled}). *)
  timeout : 'a. float -> (unit -> 'a) -> 'a option;
      (** [timeout seconds f] is [Some (f ())], or [None] once [f] was cancelled
          after [seconds] (of this clock), as [Braid_io.Time.timeout]. *)
  stat : follow:bool -> string -> (File.info, File.error) result;
      (** Metadata of a path; with [~follow:false], of a symbolic link itself.
      *)
  realpath : string -> (string, File.error) result;
      (** The absolute path without symbolic links, ["."] or [".."]. *)
  open_file : string -> File.info -> (File.contents, File.error) result;
      (** Open a regular file that [stat] just described. *)
  find_handler : Braid_http.Method.t -> string -> Router.found;
      (** The handler store: the route for a method and a raw path. *)
  middleware : Handler.t -> Handler.t;
      (** The handler store's global middleware ({!Router.use}), put around
          everything the server answers to a request. *)
  error_page : Braid_http.Request.t option -> Response.t -> Response.t;
      (** The handler store's page for the server's own errors
          ({!Router.on_error}). *)
  largest_max_body : int option;
      (** The handler store's largest route body limit
          ({!Router.largest_max_body}): the parser lets a declared body this
          large reach routing, where the route's own limit applies. Read once
          per connection. *)
  spool : Spool_budget.t;
      (** The budget that whole-body reads reserve from before writing to their
          temporary file ({!Body.to_string}). *)
}
(** One implementation of every service. Each function is called in the caller's
    fiber (not inside the handler), so it may block that fiber and perform
    effects of its own. *)

val run : t -> (unit -> 'a) -> 'a
(** [run services f] runs [f ()] with [services] answering every service call
    made inside it, in this fiber and in every fiber and pool task started
    inside it, and below those. Nested [run]s: the innermost answers. *)

val current : unit -> t
(** [current ()] is the record answering service calls here: one effect. Keep it
    for a burst of calls (the pipeline does, per request).

    Raises [Invalid_argument] outside any {!run}. *)

(** {1 The services}

    Each is [(current ()).field ...]. They block as their implementation does
    (the calling fiber only, for [Braid_server.Real_services] and {!In_memory}).

    Raises [Invalid_argument] outside any {!run}. *)

val log : Log_event.event -> unit
val now : unit -> float
val monotonic_ns : unit -> int
val sleep : float -> unit
val timeout : float -> (unit -> 'a) -> 'a option
val stat : follow:bool -> string -> (File.info, File.error) result
val realpath : string -> (string, File.error) result
val open_file : string -> File.info -> (File.contents, File.error) result
val find_handler : Braid_http.Method.t -> string -> Router.found
