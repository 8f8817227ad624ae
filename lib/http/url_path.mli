(** Request-target paths: splitting off the query, percent-decoding (RFC 3986
    §2.1), normalising dot-segments, and re-encoding. Pure functions.

    Decoding happens exactly once, segment by segment, after splitting on ["/"]:
    so [%2F] never becomes a separator, and a decoded ["%2e%2e"] is a [".."]
    segment that {!resolve} then handles like a literal one. *)

val split_target : string -> string * string option
(** [split_target target] is [(path, query)] of an origin-form (["/a/b?x=1"]
    gives [("/a/b", Some "x=1")]) or absolute-form (["http://host/a?x"] gives
    [("/a", Some "x")]; no path gives ["/"]) request-target. Other forms come
    back whole as the path, which matches no route and no file. Nothing is
    decoded. *)

type error =
  | Bad_escape  (** A [%] not followed by two hexadecimal digits. *)
  | Encoded_slash  (** A segment decodes to something holding ["/"]. *)
  | Nul_byte  (** A segment decodes to something holding a NUL byte. *)
  | Escapes_root  (** A [".."] would climb above the first segment. *)
  | Not_absolute  (** The path does not start with ["/"]. *)

val error_to_string : error -> string

val percent_decode : string -> (string, error) result
(** [percent_decode s] decodes every [%XX]; ["+"] stays ["+"] (paths are not
    forms). *)

val has_percent : string -> int -> int -> bool
(** [has_percent s i stop]: a ['%'] is among [s.[i] .. s.[stop - 1]]. Without
    one, that part of a path decodes to itself. *)

val segments : string -> (string list, error) result
(** [segments path] is the percent-decoded segments of an absolute [path], in
    order: ["/fib/10"] gives [["fib"; "10"]], ["/"] gives [[]], and an empty
    segment stays (["/a//b/"] gives [["a"; ""; "b"; ""]]). For routing: a
    segment may decode to anything ([%2F] gives ["/"] inside a parameter). *)

val normalize : string -> (string, error) result
(** [normalize path] is the absolute [path] with its dot-segments removed as RFC
    3986 §5.2.4 does ([remove_dot_segments]), a segment that percent-decodes to
    ["."] or [".."] ([%2e], [.%2E], ...) counting as one (they are the same
    segment, §6.2.2.2). Nothing else changes: other escapes stay encoded, empty
    segments stay, and a trailing ["."] or [".."] leaves a trailing slash
    (["/a/b/.."] gives ["/a/"]). A [".."] that would climb above the root is
    refused ([Escapes_root]) rather than dropped, as nginx does: ["/.."] and
    ["/a/../../x"] are errors. Allocates nothing for a path without
    dot-segments. *)

val resolve : string -> (string list, error) result
(** [resolve path] is the decoded and normalised segments of an absolute [path],
    for mapping it onto a directory: empty and ["."] segments are dropped,
    [".."] removes the previous segment, and a segment decoding to something
    with ["/"] or NUL is refused. ["/a/./b/../c"] and ["/a/%2e%2E/a/c"] give
    [["a"; "c"]]; ["/../x"] and ["/%2e%2e/x"] give [Error Escapes_root]. *)

val encode_segment : string -> string
(** [encode_segment s] percent-encodes every byte of [s] that may not appear
    literally in a path segment (RFC 3986 pchar), so that decoding gives [s]
    back. *)

val of_segments : string list -> string
(** [of_segments segs] is
    ["/" ^ String.concat "/" (List.map encode_segment segs)]. *)
