(** Why a request (or its body) was rejected, as the response the server should
    send.

    Parsing never raises on bad input: {!Request_parser.read_request} and
    {!Request_body} return these as values. *)

type t = {
  status : int;
      (** The status code to answer with: 400, 413, 414, 431, 501 or 505. *)
  reason : string;
      (** A short human-readable explanation (a constant string; may be sent in
          the response body). *)
  close : bool;
      (** [true] when the connection must be closed after answering: the framing
          of the stream is lost (the rest of the request was not consumed) or
          the request did not ask for keep-alive. [false] only when the whole
          request was consumed, so the next pipelined request starts at the
          input's position. *)
}

val pp : Format.formatter -> t -> unit
(** [pp] prints ["400 whitespace before colon (close)"]. *)
