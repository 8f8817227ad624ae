(** What the pipeline works out over and over: the wall clock as it reads it,
    the [Date] header line, and the validators and type of static files
    ([Last-Modified], [ETag], [Content-Type]).

    The services' wall clock is asked at most once per second of their monotonic
    clock; in between, the time is the last answer plus the monotonic time
    elapsed. The [Date] line is formatted at most once per second.

    Not thread-safe: keep one per event loop (the server makes one per domain)
    or per connection. Never blocks. *)

type t

val create : unit -> t
(** [create ()] is an empty cache. *)

val now : t -> Services.t -> float
(** [now cache services] is the current wall-clock time in seconds since the
    epoch: [services.now ()] if a second of [services.monotonic_ns] has passed
    since [cache] last asked it, else the last answer plus the monotonic time
    elapsed since. *)

val http_date : t -> float -> string
(** [http_date cache t] is {!Braid_http.Http_date.format} [t], remembered for
    the last few distinct seconds asked (a file's [Last-Modified] is asked on
    every request for it). *)

val etag : t -> File.info -> string
(** [etag cache info] is the [ETag] field value of [info]
    ({!Braid_http.Entity_tag.of_version}), remembered for the last file version
    asked (a crowd asking for one file asks for it on every request). *)

val content_type : t -> string -> lookup:(string -> string) -> string
(** [content_type cache name ~lookup] is [lookup name], the type of a file named
    [name], remembered for the last name asked. *)

val file_fields :
  t -> string -> File.info -> vary:bool -> (string * string) list option
(** [file_fields cache name info ~vary] is the list {!keep_file_fields} kept for
    the file [name] at version [info] and [vary], if those are the last it was
    told: the same list (physically) each time, so that {!rendered} finds it. *)

val keep_file_fields :
  t -> string -> File.info -> vary:bool -> (string * string) list -> unit
(** [keep_file_fields cache name info ~vary fields] remembers [fields], those of
    a 200 answering with the file [name] at version [info]. *)

val rendered : t -> (string * string) list -> length:int -> string option
(** [rendered cache fields ~length] is the text last kept by {!keep_rendered}
    for [fields] and [length], if [fields] is physically that list. *)

val worth_rendering : t -> (string * string) list -> length:int -> bool
(** [worth_rendering cache fields ~length]: whether the previous call was asked
    about the same (physical, non-empty) list and the same length: fields and a
    length written twice in a row are likely to come again, so keep them
    rendered. A list that comes with other lengths each time is never copied. *)

val keep_rendered : t -> (string * string) list -> length:int -> string -> unit
(** [keep_rendered cache fields ~length text] remembers that the head of a
    keep-alive HTTP/1.1 answer with [fields] and [Content-Length: length] ends
    with [text] after its Date line: a list is immutable, so the same list is
    always written the same. *)

val header_line : t -> float -> string
(** [header_line cache now] is ["Date: <IMF-fixdate of now>\r\n"]: the cached
    string while [now] stays in the same second as the last call, a fresh one
    otherwise. *)
