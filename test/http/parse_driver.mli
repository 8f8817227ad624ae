(** Test helper: run the parser over a whole stream of pipelined requests under
    a given chunking, and describe what it returned. *)

open Braid_http

type feeding =
  | Whole  (** The input holds everything from the start. *)
  | Chunks of int  (** Refills of at most that many bytes. *)
  | Sizes of int list
      (** Refills of these sizes in turn (cycled; sizes below 1 count as 1). *)

val feeding_name : feeding -> string

val describe_request : Request.t -> string
(** Method, target, form, version, framing, keep-alive, 100-continue and the
    fields, on one line. *)

val parse_stream :
  ?limits:Limits.t -> ?max_refills:int -> feeding -> string -> string list * int
(** [parse_stream feeding s] reads requests from [s] until end of input or an
    error that closes the connection, reading each body whole, and returns one
    line per outcome (["eof"], ["error 400 ... (close)"], a request described
    with its body and trailers) and the number of refills performed.
    @raise Failure
      if more than [max_refills] refills are performed (a parser that never
      stops asking). *)

val split : int -> string -> string list
(** [split n s] is [s] cut into pieces of [n] bytes (the last shorter). *)
