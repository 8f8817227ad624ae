(** Internal to [braid_http]: the line scanning shared by the request parser and
    the body reader. Not for users: its exceptions never escape the public
    functions of {!Request_parser} and {!Request_body}, which turn them into
    [Error] values. *)

exception Rejected of Parse_error.t
(** The input is invalid; the connection must close ([close = true]). *)

exception Truncated
(** End of input arrived before the line ended. *)

val reject : int -> string -> 'a
(** [reject status reason] raises [Rejected] with [close = true]. *)

val reject_char : char -> string -> 'a
(** [reject_char c reason] rejects with 400 and a reason naming a bare CR or a
    NUL when [c] is one, else [reason]. *)

(** {1 Character classes (RFC 9110 §5.6.2, §5.5; RFC 9112 §3.2)} *)

val is_tchar : char -> bool

val is_field_char : char -> bool
(** VCHAR, obs-text, SP or HTAB: what a field value may hold. *)

val is_target_char : char -> bool
(** Visible US-ASCII (0x21 to 0x7E): what a request-target may hold. *)

val scan_tchars : bytes -> int -> int -> int
(** [scan_tchars buf i stop] is the index of the first byte from [i] to
    [stop - 1] that is not a tchar, or [stop]. Likewise for the others. *)

val scan_field_chars : bytes -> int -> int -> int
val scan_target_chars : bytes -> int -> int -> int

val skip_ows : bytes -> int -> int -> int
(** [skip_ows buf i stop] skips spaces and tabs from [i]. *)

val trim_ows_end : bytes -> int -> int -> int
(** [trim_ows_end buf start stop] is [stop] moved back over trailing spaces and
    tabs, not before [start]. *)

(** {1 Lines} *)

val find_lf : Input.t -> budget:int -> status:int -> reason:string -> int
(** [find_lf input ~budget ~status ~reason] is the index in [input.buf] of the
    first LF at or after [input.pos], refilling as needed (one
    {!Input.val-refill} each time the scan reaches the end of the window), so
    that the whole line is in the window. Does not consume.
    @raise Rejected
      [(status, reason)] if none of the first [budget] bytes is an LF, at the
      same byte whatever the chunking.
    @raise Truncated at end of input before an LF. *)

val content_end : bytes -> int -> int -> int
(** [content_end buf start lf] is [lf], or [lf - 1] if a CR precedes it: the end
    of the line's content. A lone LF ends a line too (RFC 9112 §2.2). *)

val field_section : Input.t -> max_fields:int -> max_bytes:int -> Headers.t
(** [field_section input ~max_fields ~max_bytes] reads field lines up to and
    including the empty line that ends the section, and consumes them. It reads
    no byte past that empty line.
    @raise Rejected
      with 400 for a malformed line (no colon, whitespace before the colon,
      obs-fold, bare CR, NUL, other control characters) and 431 beyond
      [max_fields] fields or [max_bytes] bytes.
    @raise Truncated at end of input. *)
