(** The error codes of RFC 9113 §7, carried by RST_STREAM and GOAWAY frames.

    Codes this implementation does not know are kept as {!Unknown}: a peer may
    send them, and RFC 9113 §7 says they must not trigger special behaviour
    (they are treated as {!Internal_error}). *)

type t =
  | No_error  (** 0x0: graceful shutdown. *)
  | Protocol_error  (** 0x1: an unspecific protocol error. *)
  | Internal_error  (** 0x2 *)
  | Flow_control_error  (** 0x3: the peer broke the flow-control protocol. *)
  | Settings_timeout  (** 0x4: SETTINGS not acknowledged in time. *)
  | Stream_closed  (** 0x5: a frame on a half-closed stream. *)
  | Frame_size_error  (** 0x6: a frame of the wrong size. *)
  | Refused_stream  (** 0x7: refused before any processing; retry is safe. *)
  | Cancel  (** 0x8: the stream is no longer needed. *)
  | Compression_error  (** 0x9: the field-compression context is lost. *)
  | Connect_error  (** 0xa *)
  | Enhance_your_calm  (** 0xb: the peer is generating excessive load. *)
  | Inadequate_security  (** 0xc *)
  | Http_1_1_required  (** 0xd *)
  | Unknown of int  (** Any other 32-bit value. *)

val to_int : t -> int
(** [to_int code] is the 32-bit value on the wire. *)

val of_int : int -> t
(** [of_int n] is the code whose value is [n] ([Unknown n] for others); the
    inverse of {!to_int}. *)

val to_string : t -> string
(** [to_string code] is the RFC's name: ["PROTOCOL_ERROR"], or ["0x1f"] for an
    unknown code. *)

val pp : Format.formatter -> t -> unit
