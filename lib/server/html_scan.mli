(** Just enough of HTML's tokenizer to find a CSRF token in a page, for
    {!Testing.Client}: tags and their attributes (quoted with either quote, or
    unquoted), comments and the raw text of [script] and [style] skipped,
    character references in values decoded. No regular expressions, and no tree:
    a page is scanned once, left to right. Pure. *)

val attributes : string -> (string * (string * string) list) list
(** [attributes page] is every start tag of [page], in order: its name and its
    attributes (names lowercase, values decoded; the first of a repeated name
    only, as HTML keeps it). *)

val csrf_token : string -> string option
(** The value of the first [<input name="csrf_token">], or else the [content] of
    the first [<meta name="csrf-token">]. *)

val decode_references : string -> string
(** [decode_references "a&amp;b&#x27;"] is ["a&b'"]: the named references
    [&amp;], [&lt;], [&gt;], [&quot;], [&apos;] and [&nbsp;], and numeric ones;
    anything else is left as it is. *)
