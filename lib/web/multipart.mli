(** [multipart/form-data] bodies (RFC 7578), streamed: parts are delivered as
    they arrive, their content in pieces, so a file upload need not be held in
    memory.

    Reading blocks the handler's fiber while the body arrives (other connections
    are served meanwhile), and must happen in the handler's fiber or a fiber it
    forked (see {!Body}); it is cancelled with the handler ({!Braid.Cancelled}).
    The whole body stays bounded by the route's body limit ([413] beyond). *)

type part = {
  name : string;  (** The [name] of its [Content-Disposition: form-data]. *)
  filename : string option;  (** Its [filename], for a file. *)
  content_type : string option;  (** Its [Content-Type] field. *)
  headers : (string * string) list;  (** All its fields, in order. *)
}

type event =
  | Part of part  (** A part starts. *)
  | Data of string  (** A piece of its content (never empty), in order. *)
  | End_of_part

type limits = {
  max_parts : int;  (** More parts: [413]. *)
  max_part_size : int;  (** A part's content above this many bytes: [413]. *)
  max_header_bytes : int;
      (** A part's header section above this many bytes, or a preamble before
          the first boundary above it: [431] and [400]. *)
}

val default_limits : limits
(** 100 parts, 16 MiB per part, 8 KiB of header per part. *)

val try_fold :
  ?limits:limits ->
  ?csrf:bool ->
  Handler.request ->
  init:'a ->
  ('a -> event -> ('a, Response.t) result) ->
  ('a, Response.t) result
(** [try_fold r ~init f] reads [r]'s [multipart/form-data] body and folds [f]
    over its events: for each part, [Part], then its content as [Data] pieces,
    then [End_of_part]. [f] may stop the reading early by answering
    [Error response], which [try_fold] then answers, the rest of the body unread
    (a part's fields were wrong, the user may not upload that file).

    [Error] is otherwise the answer the client deserves, and [f] may have seen
    some events of the parts before the error: [415] if the [Content-Type] is
    not [multipart/form-data] with a valid [boundary], [400] for a body
    truncated before its closing boundary, a part without
    [Content-Disposition: form-data; name=...], or malformed part fields, [413]
    or [431] beyond [limits], the body's own status ([400], [408], [413]) if it
    could not be read. An exception from [f] propagates (the handler's [500]).

    {b CSRF.} Where a {!Session.middleware} is in force (and [csrf] is not
    [false]), the form must hold one valid [csrf_token] part ({!Csrf.tag})
    before any file part. [f] sees nothing until it has been checked: fields
    before it (64 KiB at most) are held back, then handed to [f] in order; the
    token part itself is not. A missing, invalid or repeated token, or a file
    part before it, is a [403], and the file's content is never read. *)

val fold :
  ?limits:limits ->
  ?csrf:bool ->
  Handler.request ->
  init:'a ->
  ('a -> event -> 'a) ->
  ('a, Response.t) result
(** [fold r ~init f] is {!try_fold} with an [f] that never stops early. *)

val parts :
  ?limits:limits ->
  ?csrf:bool ->
  Handler.request ->
  ((part * string) list, Response.t) result
(** [parts r] is every part with its whole content, in order: {!fold} for forms
    whose parts are all small enough to keep in memory (choose
    [limits.max_part_size] accordingly). The CSRF check is {!try_fold}'s. *)
