(** SETTINGS parameters (RFC 9113 §6.5.2): what a SETTINGS frame carries, and
    the values in force on one side of a connection.

    {[
      let peer =
        Settings.apply Settings.default
          [ Max_frame_size 65536; Initial_window_size 1_048_576 ]
      in
      assert (peer.max_frame_size = 65536);
      assert (peer.header_table_size = 4096)
    ]} *)

(** A parameter with a value in its range: {!Frame.parse} rejects the others
    with the error §6.5.2 gives, and skips parameters it does not know, as the
    RFC requires. *)
type setting =
  | Header_table_size of int  (** 0x1: HPACK's dynamic table, in bytes. *)
  | Enable_push of bool  (** 0x2: sent by a client; a server never pushes. *)
  | Max_concurrent_streams of int  (** 0x3 *)
  | Initial_window_size of int  (** 0x4: at most 2{^ 31}-1. *)
  | Max_frame_size of int  (** 0x5: 2{^ 14} to 2{^ 24}-1. *)
  | Max_header_list_size of int  (** 0x6: advisory, in HPACK's sizes. *)

type t = {
  header_table_size : int;
  enable_push : bool;
  max_concurrent_streams : int option;  (** [None]: no limit. *)
  initial_window_size : int;
  max_frame_size : int;
  max_header_list_size : int option;  (** [None]: no limit. *)
}
(** The values one side announced, starting from the RFC's initial ones. *)

val default : t
(** The initial values: 4096, push enabled, no stream limit, 65535, 16384, no
    header list limit. *)

val apply : t -> setting list -> t
(** [apply t settings] is [t] updated by a SETTINGS frame's parameters, in order
    (a later value of one parameter wins). *)

val identifier : setting -> int
(** [identifier s] is the parameter's identifier on the wire (0x1-0x6). *)

val value : setting -> int
(** [value s] is the parameter's value on the wire ([Enable_push true] is 1). *)

val of_wire : int -> int -> (setting option, Violation.t) result
(** [of_wire identifier value] is the parameter, [None] for an identifier this
    module does not know (to be ignored), or the connection error a value out of
    range is: PROTOCOL_ERROR for [Enable_push] other than 0 or 1 and
    [Max_frame_size] out of range, FLOW_CONTROL_ERROR for [Initial_window_size]
    above 2{^ 31}-1. *)

val pp_setting : Format.formatter -> setting -> unit
