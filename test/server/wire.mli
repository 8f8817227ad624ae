(** Parsing HTTP/1.1 responses as a client would, for checking what the server
    wrote. *)

type response = {
  status : int;
  headers : (string * string) list;  (** In order, names as sent. *)
  body : string;  (** De-chunked. *)
  chunked : bool;
}

val header : response -> string -> string option
(** Case-insensitive. *)

val header_count : response -> string -> int

val parse : ?heads:int list -> string -> response list * string
(** [parse s] reads every complete response in [s], interim (1xx) ones included,
    and returns them with what is left. [heads] lists the indices (from 0,
    counting final responses only) of responses to HEAD requests, which have no
    body. A response without [Content-Length] or chunked coding runs to the end
    of [s].
    @raise Failure on a malformed response. *)

val finals : response list -> response list
(** Without the interim responses. *)
