(** Internal to [braid_http]: the values of [Content-Length] and
    [Transfer-Encoding] folded, field by field, into integer states without
    allocating. The request parser and the response parser both frame bodies
    with these, so the two sides cannot disagree on where a message ends. *)

(** {1 Content-Length (RFC 9110 §8.6)} *)

val cl_none : int
(** No Content-Length field seen yet. *)

val cl_invalid : int
(** A value that is not [1*DIGIT] or a list of them. *)

val cl_conflict : int
(** Two different lengths (in one list or in several fields). *)

val content_length : string -> int -> int
(** [content_length value current] folds one field's [value] into [current]
    (start with {!cl_none}): the length, saturated at [max_int], or one of the
    negative states above, which stick. *)

(** {1 Transfer-Encoding (RFC 9112 §6.1)} *)

val te_seen : int
(** Set by the caller for every Transfer-Encoding field, even an empty one. *)

val te_chunked : int

val te_after_chunked : int
(** A coding after chunked. *)

val te_before_chunked : int
(** A coding other than chunked, before it. *)

val te_chunked_twice : int

val te_invalid : int
(** Not a list of transfer codings. *)

val transfer_codings : string -> int -> int
(** [transfer_codings value state] folds one field's [value] into the bits of
    [state]. *)
