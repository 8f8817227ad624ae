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

val header_line : t -> float -> string
(** [header_line cache now] is ["Date: <IMF-fixdate of now>\r\n"]: the cached
    string while [now] stays in the same second as the last call, a fresh one
    otherwise. *)
