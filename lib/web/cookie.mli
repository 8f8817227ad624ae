(** Cookies: reading the [Cookie] field (RFC 6265 §4.2.1, §5.4) and building
    [Set-Cookie] fields (§4.1).

    Pure functions: they block nothing and may run anywhere.

    {b Reading} tolerates what browsers send: no space or several spaces after
    [;], an empty pair ([a=1;;b=2], a trailing [;]), a value in double quotes
    (the quotes are dropped), bytes from 0x80 and blanks, commas or backslashes
    inside a value, several [Cookie] fields (joined), and a pair without [=]
    (skipped: browsers send one for a nameless cookie set by a script). It
    refuses garbage with a clear [400]: a name that is not a token ([a b=1],
    [=1], [(x)=1]), a control character, or a double quote that does not enclose
    the whole value.

    {b Writing} cannot produce a field that splits the response or injects an
    attribute: the name must be a token and the value cookie-octets (printable
    ASCII but space, double quote, comma, semicolon and backslash: encode
    anything else, e.g. with {!Query.encode} or base64url), the path printable
    ASCII without [;], the domain letters, digits, [-] and [.]. A violation
    raises [Invalid_argument] where the handler builds the response, which the
    server answers with a [500], as for {!Response.make}; the field then goes
    through {!Response.with_header}'s checks too. *)

val parse : string -> ((string * string) list, string) result
(** [parse {|a=1; b="x y"|}] is [Ok [("a", "1"); ("b", "x y")]], in order.
    [Error why] for garbage (see above). *)

val all : Handler.request -> ((string * string) list, Response.t) result
(** [all r] is every cookie of [r]'s [Cookie] fields ([[]] without one), or a
    [400] saying what is malformed. *)

val get : Handler.request -> string -> (string option, Response.t) result
(** [get r name] is the first cookie called [name], or a [400] as {!all}. *)

type same_site = Strict | Lax | None_

val set_cookie :
  ?max_age:int ->
  ?expires:float ->
  ?path:string ->
  ?domain:string ->
  ?secure:bool ->
  ?http_only:bool ->
  ?same_site:same_site ->
  string ->
  string ->
  string
(** [set_cookie name value] is the value of a [Set-Cookie] field: [name=value]
    then, in this order, [Max-Age=n], [Expires=<IMF-fixdate>] ([expires] is
    seconds since the epoch, {!Braid_http.Http_date.format}), [Path], [Domain],
    [Secure], [HttpOnly] and [SameSite], each only when given ([secure] and
    [http_only] default to [false]).

    Raises [Invalid_argument] if [name] is not a token, [value] holds a byte
    that is not a cookie-octet, [path] holds [;] or a control character,
    [domain] is empty or holds a byte other than letters, digits, [-] and [.],
    or [same_site] is [None_] without [secure] (browsers drop such cookies). *)

val set :
  ?max_age:int ->
  ?expires:float ->
  ?path:string ->
  ?domain:string ->
  ?secure:bool ->
  ?http_only:bool ->
  ?same_site:same_site ->
  string ->
  string ->
  Response.t ->
  Response.t
(** [set name value response] is [response] with one more [Set-Cookie] field
    ({!set_cookie}), after its other fields.

    Raises [Invalid_argument] as {!set_cookie}. *)

val delete :
  ?path:string -> ?domain:string -> string -> Response.t -> Response.t
(** [delete name response] asks the browser to drop the cookie: [name=] with
    [Max-Age=0] and an [Expires] in 1970 ([path] and [domain] must be those it
    was set with).

    Raises [Invalid_argument] as {!set_cookie}. *)
