(** The services of {!Capabilities} as effects, and the handler that answers
    them.

    A connection served by the effects-based pipeline performs these effects;
    the handler that {!run} installs around it answers each with one function of
    a {!Capabilities.t}. Production and tests differ only in that record
    ({!Production.capabilities}, {!In_memory.capabilities}), and one service can
    be swapped alone:
    {[
      let fixed_clock = { (Production.capabilities p) with now = fun () -> 0. } in
      Services.run fixed_clock (fun () -> serve_connection ...)
    ]}
    Effects not listed here (the IO loop's [Suspend], the parser's [Refill])
    pass through the handler untouched, so blocking inside {!run} blocks only
    the fiber. *)

type cell = {
  mutable event : Log.event;
  mutable meth : Braid_http.Method.t;
  mutable path : string;
  mutable follow : bool;
  mutable info : File.info;
}
(** A connection's reusable arguments for the effects it performs on every
    request. Performing [Log event] allocates the effect value; the pipeline
    instead keeps one [Logged cell] and one [Lookup cell] per connection and
    puts the argument in [cell] first, so a request's effects allocate nothing
    but their continuations (the parser's [Input.Refill] is built once per input
    for the same reason). *)

type _ Effect.t +=
  | Log : Log.event -> unit Effect.t
  | Now : float Effect.t
  | Stat : {
      follow : bool;
      path : string;
    }
      -> (File.info, File.error) result Effect.t
  | Realpath : string -> (string, File.error) result Effect.t
  | Open_file :
      string * File.info
      -> (File.contents, File.error) result Effect.t
  | Find_handler : Braid_http.Method.t * string -> Router.found Effect.t
  | Logged : cell -> unit Effect.t  (** [Log cell.event]. *)
  | Lookup : cell -> Router.found Effect.t
        (** [Find_handler (cell.meth, cell.path)]. *)
  | Stat_cell : cell -> (File.info, File.error) result Effect.t
        (** [Stat { follow = cell.follow; path = cell.path }]. *)
  | Open_cell : cell -> (File.contents, File.error) result Effect.t
        (** [Open_file (cell.path, cell.info)]. *)

val run : Capabilities.t -> (unit -> 'a) -> 'a
(** [run services f] runs [f ()], answering every service effect performed
    inside (in this fiber) with [services]. An exception raised by a service is
    raised at the [perform]. Nested [run]s: the innermost answers. Answering
    allocates nothing: the handler's replies are built once per [run]. *)

(** The capabilities of {!Capabilities.S} as effects: each function performs its
    effect, and {!Capabilities.S.run} answers them with the env's services. An
    [env] also holds the connection's reusable effect values: make one per
    connection (it is not shared between fibers). *)
module Perform : sig
  include Capabilities.S

  val env : Capabilities.t -> env
  (** [env services] performs effects that [run env] answers with [services]. *)
end
