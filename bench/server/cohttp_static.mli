(** The cohttp-lwt-unix peer of the [http] benchmark: a static file server
    written the way cohttp's documentation suggests
    ([Cohttp.Path.resolve_local_file] and [Server.respond_file]). *)

val run : port:int -> root:string -> unit
(** Serves [root] on [port] for ever. Blocks. *)
