(** Response status codes (RFC 9110 §15). *)

val reason : int -> string
(** [reason code] is the standard reason phrase of [code] (["Not Found"] for
    [404]), or a generic one for its class (["Client Error"] for an unknown
    [4xx]) when the code is not registered. *)

val is_valid : int -> bool
(** [is_valid code]: [100 <= code <= 599], the codes RFC 9110 §15 defines
    classes for. *)

val status_line : int -> string
(** [status_line code] is ["HTTP/1.1 <code> <reason>\r\n"], computed once per
    code.

    Raises [Invalid_argument] unless [is_valid code]. *)

val has_no_body : int -> bool
(** [has_no_body code] is [true] for 1xx, 204 and 304: such responses end with
    their header section (RFC 9112 §6.3), whatever headers say. *)
