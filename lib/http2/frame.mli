(** HTTP/2 frames (RFC 9113 §4 and §6): parsing from a window of bytes and
    writing into a buffer.

    {!parse} reads one frame at a time from bytes the caller owns. It copies
    nothing it need not: DATA payloads and field block fragments are
    {!payload}s, windows into the caller's bytes, valid until the caller reuses
    them. It checks everything a frame says about itself (size, stream, flags,
    padding, setting values) and returns the violation RFC 9113 names for each
    fault; what depends on the connection's state (stream states, CONTINUATION
    sequencing, flow-control windows, a server refusing PUSH_PROMISE) is the
    connection's to check.

    {[
      let b = Buffer.create 32 in
      Frame.write b (Frame.Ping { ack = false; data = "12345678" });
      let bytes = Buffer.to_bytes b in
      match Frame.parse ~max_frame_size:16384 bytes 0 (Bytes.length bytes) with
      | Frame (Ping { ack; data }, used) ->
          assert ((not ack) && data = "12345678" && used = 17)
      | _ -> assert false
    ]} *)

(** {1 The connection preface} *)

val client_preface : string
(** ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"], the 24 bytes a client sends first
    (§3.4), before its SETTINGS frame. *)

type preface_check =
  | Preface  (** The window starts with the whole preface. *)
  | Preface_so_far  (** The window is a proper prefix of it: read more. *)
  | Not_preface
      (** It is not the preface: a connection error PROTOCOL_ERROR (§3.4), or,
          before any HTTP/2 was agreed, perhaps HTTP/1.1. *)

val check_preface : bytes -> int -> int -> preface_check
(** [check_preface b off len] compares the [len] bytes at [off] with
    {!client_preface}. *)

(** {1 Frames} *)

type payload = { bytes : bytes; off : int; len : int }
(** [len] bytes of [bytes] from [off], not copied. *)

val payload_of_string : string -> payload
(** [payload_of_string s] is the whole of [s], to write. *)

val payload_to_string : payload -> string
(** [payload_to_string p] is a copy of the bytes [p] names. *)

type priority = {
  exclusive : bool;
  depends_on : int;  (** The stream depended on; 0 for the root. *)
  weight : int;  (** 1 to 256. *)
}
(** A priority signal (§5.3.2 of RFC 7540). RFC 9113 deprecates the scheme; its
    fields are parsed because they take room in HEADERS and PRIORITY. *)

type t =
  | Data of {
      stream : int;
      end_stream : bool;
      data : payload;
      pad_length : int option;
          (** The Pad Length field, if the frame is PADDED: that many bytes of
              padding follow the data. *)
    }
  | Headers of {
      stream : int;
      end_stream : bool;
      end_headers : bool;
          (** No CONTINUATION follows: [fragment] is the whole block. *)
      priority : priority option;
      fragment : payload;  (** A field block fragment (HPACK). *)
      pad_length : int option;
    }
  | Priority of { stream : int; priority : priority }
  | Rst_stream of { stream : int; code : Error_code.t }
  | Settings of Settings.setting list
      (** Parameters in the order sent, unknown ones left out. *)
  | Settings_ack
  | Push_promise of {
      stream : int;
      end_headers : bool;
      promised_stream : int;
      fragment : payload;
      pad_length : int option;
    }
      (** Only a server sends these: a server receiving one must treat it as a
          connection error PROTOCOL_ERROR (§8.4). *)
  | Ping of { ack : bool; data : string  (** 8 bytes. *) }
  | Goaway of { last_stream : int; code : Error_code.t; debug : string }
  | Window_update of { stream : int; increment : int  (** 1 to 2{^ 31}-1. *) }
  | Continuation of { stream : int; end_headers : bool; fragment : payload }
  | Unknown of {
      frame_type : int;
      flags : int;
      stream : int;
      payload : payload;
    }
      (** A type this module does not know: to be ignored (§4.1), except that it
          must not come between HEADERS and its CONTINUATIONs (§6.10). *)

val frame_header_length : int
(** 9: every frame begins with a 9-byte header. *)

val stream : t -> int
(** [stream f] is the stream the frame belongs to, 0 for the connection. *)

val flow_controlled_length : t -> int
(** [flow_controlled_length f] is what [f] counts against flow-control windows
    (§6.9): a DATA frame's whole payload, padding included; 0 for other frames.
*)

(** {1 Parsing} *)

type parsed =
  | Frame of t * int  (** A frame, and the bytes it took (header included). *)
  | Need_more of int
      (** The window holds only part of a frame: at least this many bytes from
          [off] are needed (9 for a header, then the whole frame). *)
  | Invalid of Violation.t * int
      (** The frame breaks RFC 9113, and the bytes it took. After a
          [Stream_error], the connection resumes after those bytes; after a
          [Connection_error], it reads nothing more. *)

val parse : max_frame_size:int -> bytes -> int -> int -> parsed
(** [parse ~max_frame_size b off len] reads the frame at the start of the [len]
    bytes at [off]. [max_frame_size] is the SETTINGS_MAX_FRAME_SIZE this
    endpoint announced: a longer frame is a connection error FRAME_SIZE_ERROR,
    reported as soon as its header is read, so a peer cannot make the caller
    buffer it.

    The faults it reports (§6), as connection errors unless said:
    - a frame on stream 0 that belongs to a stream (DATA, HEADERS, PRIORITY,
      RST_STREAM, PUSH_PROMISE, CONTINUATION), or on a stream when it belongs to
      the connection (SETTINGS, PING, GOAWAY): PROTOCOL_ERROR;
    - a wrong length: FRAME_SIZE_ERROR (for PRIORITY, a stream error);
    - padding as long as what carries it, or not zeros: PROTOCOL_ERROR;
    - a SETTINGS value out of range ({!Settings.of_wire});
    - a PRIORITY that makes a stream depend on itself: a stream error
      PROTOCOL_ERROR (§5.3.1 of RFC 7540). The same in HEADERS is returned as a
      frame, for its field block must still be decoded: the connection checks
      it;
    - a WINDOW_UPDATE of 0: PROTOCOL_ERROR, a stream error on a stream.

    Raises [Invalid_argument] if [off] and [len] are not a valid slice of [b].
*)

(** {1 Writing} *)

val write : Buffer.t -> t -> unit
(** [write b f] appends frame [f]. The caller keeps frames within the peer's
    SETTINGS_MAX_FRAME_SIZE ({!write_field_block} splits blocks).

    Raises [Invalid_argument] if a field is out of range: a stream identifier
    outside [0, 2{^31}-1], a pad length outside [0, 255], PING data not of 8
    bytes, a weight outside [1, 256], a payload longer than 2{^ 24}-1 bytes. *)

val write_field_block :
  Buffer.t ->
  max_frame_size:int ->
  stream:int ->
  end_stream:bool ->
  ?priority:priority ->
  string ->
  unit
(** [write_field_block b ~max_frame_size ~stream ~end_stream block] appends
    [block] (from {!Hpack.Encoder.encode}) as a HEADERS frame followed by as
    many CONTINUATION frames as needed to keep each within [max_frame_size]. *)

val pp : Format.formatter -> t -> unit
(** [pp] prints a frame with its payloads in full, for tests and logs. *)
