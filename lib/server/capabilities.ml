type t = {
  log : Log.event -> unit;
  now : unit -> float;
  stat : follow:bool -> string -> (File.info, File.error) result;
  realpath : string -> (string, File.error) result;
  open_file : string -> File.info -> (File.contents, File.error) result;
  find_handler : Braid_http.Method.t -> string -> Router.found;
}

module type S = sig
  type env

  val run : env -> (unit -> 'a) -> 'a
  val log : env -> Log.event -> unit
  val now : env -> float
  val stat : env -> follow:bool -> string -> (File.info, File.error) result
  val realpath : env -> string -> (string, File.error) result

  val open_file :
    env -> string -> File.info -> (File.contents, File.error) result

  val find_handler : env -> Braid_http.Method.t -> string -> Router.found
end
