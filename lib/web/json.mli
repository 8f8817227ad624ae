(** JSON bodies, as [Yojson.Safe.t] values (the yojson library).

    Documents are read by this module's own strict reader ({!of_string}), not
    yojson's, which accepts comments, tuples, [NaN] and unquoted keys; yojson
    builds and prints values.

    {!body} reads the request body: it blocks the handler's fiber until the body
    has arrived, within the route's body limit, and must be called from the
    handler's fiber or a fiber it forked (see {!Body}); it is cancelled with the
    handler ({!Braid.Cancelled}). {!of_string} and {!response} are pure and may
    be called from any fiber or domain. *)

val max_depth : int
(** [512]: the deepest nesting of arrays and objects {!body} accepts. *)

val of_string : ?max_depth:int -> string -> (Yojson.Safe.t, string) result
(** [of_string s] is the JSON text [s] (RFC 8259) as a value, or [Error] saying
    at which byte offset (from 0) and why it is not one.

    Accepted: exactly RFC 8259's grammar. Any value may be the whole document;
    whitespace around tokens is only space, tab, CR and LF (no byte order mark).
    Refused: comments, tuples and variants (yojson's extensions), [NaN] and
    [Infinity], unquoted or single-quoted keys, trailing commas, numbers outside
    the grammar ([+1], [01], [.5], [1.], [0x1]), raw control characters (below
    U+0020) in strings, bytes that are not UTF-8 in strings (overlong forms,
    surrogates, above U+10FFFF; RFC 3629), unknown escapes, and escapes of lone
    surrogates ([\uD800] not followed by [\uDC00]-[\uDFFF], or a
    [\uDC00]-[\uDFFF] alone): a [`String] holds UTF-8, which cannot encode them
    (Python's [json] accepts them; RFC 8259 section 8.2 leaves them undefined).

    Arrays and objects may nest [max_depth] deep (default {!max_depth});
    [max_depth] [0] allows scalars only. The depth is counted as the reader
    descends: a deeper document is refused at the first bracket too many, having
    read no further, so refusing it costs at most [max_depth] levels whatever
    its size. The reader is iterative (no recursion per level).

    Values: an integer (no fraction, no exponent) is [`Int] if it fits OCaml's
    [int] (63 bits), otherwise [`Intlit] with its digits as written; any other
    number is [`Float], correctly rounded, and refused if it overflows to
    infinity ([1e400]); strings are [`String] (UTF-8, escapes decoded); an
    object is [`Assoc] with every member in the order written, duplicate keys
    included (which one counts is the application's choice). [`Tuple] and
    [`Variant] never occur. *)

val body : Handler.request -> (Yojson.Safe.t, Response.t) result
(** [body r] is the JSON document that is [r]'s body, read by {!of_string}
    (nesting at most {!max_depth}). [Error] is the answer the client deserves:
    [415] if [r] has a [Content-Type] that is neither [application/json] nor
    [*/*+json] (none is accepted), [400] saying where the document is invalid
    and why (empty, truncated, trailing bytes, bad syntax, nested too deep: see
    {!of_string}), the body's own status ([400], [408], [413]) if it could not
    be read. The body's size is bounded by the route's body limit. *)

val response :
  ?status:int -> ?headers:(string * string) list -> Yojson.Safe.t -> Response.t
(** [response json] is a [200] (or [status]) with [json] as its body and
    [Content-Type: application/json].

    Raises [Invalid_argument] as {!Response.string}. *)
