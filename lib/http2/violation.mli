(** What a peer did wrong, and how RFC 9113 §5.4 says to answer it.

    A {!Connection_error} ends the connection: send GOAWAY with [code] and
    close. A {!Stream_error} ends one stream: send RST_STREAM with [code] on
    [stream]; the connection goes on (an endpoint may still choose to treat it
    as a connection error). The codec returns these as values, never raises
    them. *)

type t =
  | Connection_error of { code : Error_code.t; reason : string }
  | Stream_error of { stream : int; code : Error_code.t; reason : string }
      (** [reason] is a constant, human-readable explanation: fit for a GOAWAY's
          debug data or a log, not for parsing. *)

val code : t -> Error_code.t
(** [code v] is the error code to send. *)

val pp : Format.formatter -> t -> unit
(** [pp] prints ["connection error PROTOCOL_ERROR: DATA on stream 0"] or
    ["stream 3 error FRAME_SIZE_ERROR: PRIORITY of 4 bytes"]. *)
