(** The services of {!Capabilities} as effects, and the handler that answers
    them.

    A connection served by the effects-based pipeline performs {!Log}, {!Now},
    {!Stat}, {!Realpath}, {!Open_file} and {!Find_handler}; the handler that
    {!run} installs around it answers each with one function of a
    {!Capabilities.t}. Production and tests differ only in that record
    ({!Production.capabilities}, {!In_memory.capabilities}), and one service can
    be swapped alone:
    {[
      let fixed_clock = { (Production.capabilities p) with now = fun () -> 0. } in
      Services.run fixed_clock (fun () -> serve_connection ...)
    ]}
    Effects not listed here (the IO loop's [Suspend], the parser's [Refill])
    pass through the handler untouched, so blocking inside {!run} blocks only
    the fiber. *)

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

val run : Capabilities.t -> (unit -> 'a) -> 'a
(** [run services f] runs [f ()], answering every service effect performed
    inside (in this fiber) with [services]. An exception raised by a service is
    raised at the [perform]. Nested [run]s: the innermost answers. *)

module Perform : Capabilities.S with type env = unit
(** The capabilities of {!Capabilities.S} as effects: each function performs its
    effect. Outside {!run} they raise [Effect.Unhandled]. *)
