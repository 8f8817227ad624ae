(** The same request grammar and checks as [Braid_http.Request_parser] and
    [Braid_http.Request_body], written with Angstrom combinators in the usual
    callback style, for the [parser] benchmark. *)

type request = {
  meth : Braid_http.Method.t;
  target : string;
  version : Braid_http.Request.version;
  headers : (string * string) list;
  keep_alive : bool;
  expect_continue : bool;
  body : string;
  trailers : (string * string) list;
}

val request : Braid_http.Limits.t -> request Angstrom.t
(** One request, its body included. Fails (with a message) where the Braid
    parser returns an error. *)

val stream : Braid_http.Limits.t -> (request -> unit) -> unit Angstrom.t
(** [stream limits f] parses pipelined requests until the input ends, committing
    after each and passing it to [f]. *)
