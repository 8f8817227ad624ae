(** The WebSocket protocol (RFC 6455) without I/O: what a server or a client
    needs to speak it over any transport. [Braid_web.Websocket] is the server's
    side over an upgraded connection; a client (the benchmarks') writes and
    reads frames with {!Frame}. Pure: any domain, never blocks. *)

val accept_key : string -> string
(** [accept_key key] is the [Sec-WebSocket-Accept] for [Sec-WebSocket-Key]
    [key]: base64 (SHA-1 ([key] ^ the RFC's GUID)). *)

(** UTF-8 validation, incremental: a text message is checked fragment by
    fragment, a code point may straddle two. Rejects what RFC 3629 forbids:
    overlong forms, surrogates (U+D800-U+DFFF), code points past U+10FFFF, stray
    continuation bytes, truncated sequences. *)
module Utf8 : sig
  type state

  val start : state
  val feed : state -> string -> state

  val is_invalid : state -> bool
  (** No continuation can make the bytes fed valid. *)

  val is_complete : state -> bool
  (** The bytes fed are valid UTF-8, no sequence left open. *)

  val is_valid : string -> bool
  (** [is_valid s] is [is_complete (feed start s)]. *)
end

(** Frames (RFC 6455 §5.2). *)
module Frame : sig
  type opcode =
    | Continuation
    | Text
    | Binary
    | Close
    | Ping
    | Pong
    | Reserved of int  (** 3-7, 11-15. *)

  val is_control : opcode -> bool

  type header = {
    fin : bool;
    rsv : int;  (** The three reserved bits. *)
    opcode : opcode;
    mask : string option;  (** The 4-byte masking key. *)
    length : int;  (** Of the payload. *)
  }

  type parsed =
    | Header of header * int  (** The header and its size in bytes. *)
    | Need_more
    | Invalid of string  (** A 64-bit length with its top bit set. *)

  val parse_header : bytes -> int -> int -> parsed
  (** [parse_header b off len] reads a frame's header from [len] bytes at [off].
  *)

  val serialize :
    ?mask:string -> ?fin:bool -> ?rsv:int -> opcode -> string -> string
  (** [serialize op payload] is a whole frame ([fin] by default, unmasked unless
      [mask]: a client's 4-byte key).

      Raises [Invalid_argument] if [mask] is not 4 bytes. *)

  val apply_mask : mask:string -> ?start:int -> bytes -> int -> int -> unit
  (** [apply_mask ~mask b off len] masks (or unmasks) [len] bytes at [off] in
      place, as if they began at offset [start] (default 0) of the payload;
      eight bytes at a time.

      Raises [Invalid_argument] if [mask] is not 4 bytes or [off] and [len] are
      not a valid slice of [b]. *)
end

val valid_code : int -> bool
(** [valid_code code]: whether a peer may send [code] in a close frame (RFC 6455
    §7.4.1 and the IANA registry's 1012-1014): 1000-1003, 1007-1014 and
    3000-4999. *)
