(** The cross-cutting services the connection pipeline needs: logging, the
    clock, file access and the handler store.

    The pipeline is written once against {!S} ({!Pipeline.Make}) and
    instantiated twice: with {!Services.Perform}, whose functions perform
    effects answered by whatever handlers are installed around the connection
    (production or in-memory, swappable one by one), and with
    {!Production.Direct}, which calls the production implementations directly.
    Both run the same pipeline code, so the difference between them is exactly
    the cost of the effects. *)

type t = {
  log : Log.event -> unit;
      (** Record an event. Must not block the fiber for long. *)
  now : unit -> float;
      (** Wall-clock time, seconds since the epoch. Called once per request:
          must be cheap. *)
  stat : follow:bool -> string -> (File.info, File.error) result;
      (** Metadata of a path; with [~follow:false], of a symbolic link itself.
      *)
  realpath : string -> (string, File.error) result;
      (** The absolute path without symbolic links, ["."] or [".."]. *)
  open_file : string -> File.info -> (File.contents, File.error) result;
      (** Open a regular file that [stat] just described. *)
  find_handler : Braid_http.Method.t -> string -> Router.found;
      (** The handler store: the route for a method and a raw path. *)
}
(** One implementation of every service, as plain functions. {!Services.run}
    answers the effects with them;
    [{ (Production.capabilities p) with now = ... }] swaps one. *)

(** The same services as a module, for the pipeline functor. [env] is what a
    direct implementation needs at hand ([unit] for effects). *)
module type S = sig
  type env

  val run : env -> (unit -> 'a) -> 'a
  (** [run env f] runs [f ()] with the services available: an effects-based
      implementation installs its handlers, a direct one just calls [f]. The
      pipeline calls it inside the parser's input handler, so that its
      per-request effects meet their handler first. *)

  val log : env -> Log.event -> unit
  val now : env -> float
  val stat : env -> follow:bool -> string -> (File.info, File.error) result
  val realpath : env -> string -> (string, File.error) result

  val open_file :
    env -> string -> File.info -> (File.contents, File.error) result

  val find_handler : env -> Braid_http.Method.t -> string -> Router.found
end
