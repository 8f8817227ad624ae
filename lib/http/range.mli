(** The [Range] request field for one representation of known size (RFC 9110
    §14). Pure functions.

    Only a single byte range is served as [206]. Several ranges are answered
    with the whole representation ([200]), which RFC 9110 §14.2 allows (a server
    may ignore [Range]): it avoids [multipart/byteranges] and the amplification
    of overlapping ranges. A syntactically invalid field, or another unit than
    [bytes], is ignored the same way (RFC 9110 §14.2: "MUST ignore"). *)

type t =
  | Whole  (** Send everything: no usable range. *)
  | Part of { first : int; last : int }
      (** Send bytes [first] to [last] inclusive: [206]. *)
  | Unsatisfiable
      (** A single range that selects nothing: [416] with
          [Content-Range: bytes */size]. *)

val resolve : string -> size:int -> t
(** [resolve field ~size] interprets the value of a [Range] field for a
    representation of [size] bytes: ["bytes=0-99"], ["bytes=100-"] (to the end),
    ["bytes=-100"] (the last 100 bytes); a [last] past the end is clamped; a
    [first] at or past the end, or a suffix of 0, is [Unsatisfiable]. *)

val content_range : first:int -> last:int -> size:int -> string
(** ["bytes first-last/size"]. *)

val unsatisfied_range : size:int -> string
(** ["bytes */size"]. *)
