(** The cookies a browser would keep for one host (RFC 6265 §5.3, §5.4), for
    {!Testing.Client}: what [Set-Cookie] fields store, replace and delete, and
    the [Cookie] field sent back for a request path.

    Pure values: every function returns a new jar. Times are seconds since the
    epoch on the caller's clock (the client gives its services' clock, so an
    [In_memory] clock moved forward expires cookies). *)

type cookie = {
  name : string;
  value : string;
  path : string;
  expires : float option;  (** [None]: a session cookie. *)
  secure : bool;
  http_only : bool;
}

type t

val empty : t

val receive :
  t -> now:float -> https:bool -> host:string -> path:string -> string -> t
(** [receive jar ~now ~https ~host ~path field] is [jar] after the [Set-Cookie]
    value [field] of a response to a request for [path] on [host]: the cookie is
    added, replacing one of the same name and path; a [Max-Age] of zero or less
    or an [Expires] not after [now] removes it. Ignored, as a browser ignores
    them: a field without [=] or with an empty name, a [Secure] cookie received
    over plain HTTP, a [Domain] that [host] is not (nor a subdomain of). [Path]
    defaults to the directory of [path]; [Max-Age] wins over [Expires]; an
    unparsable one of them is ignored. *)

val header : t -> now:float -> https:bool -> path:string -> string option
(** The [Cookie] field for a request for [path]: the unexpired cookies whose
    path matches, [Secure] ones only over HTTPS, longest path first then oldest
    first, as ["a=1; b=2"]; [None] if there is none. *)

val cookies : t -> now:float -> cookie list
(** The unexpired cookies, oldest first. *)

val set : t -> cookie -> t
(** [set jar c] adds [c] as a browser would store it (replacing one of the same
    name and path), whatever its attributes. *)

val remove : t -> name:string -> t
(** Every cookie [name] removed, whatever its path. *)
