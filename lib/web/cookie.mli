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

(** {1 Signed cookies}

    A signed cookie comes back as the server set it or is refused: the user can
    read it (it is not encrypted) but not change it or move it to another cookie
    name. See {!Signed} for the format, keys and rotation.

    {[
      let keys = Signed.keys [ Token.random_bytes 32 ]

      let login _r =
        Response.string "hello" |> Cookie.set_signed ~keys "user" "ada"

      let me r =
        match Cookie.get_signed ~keys r "user" with
        | Ok (Cookie.Valid user) -> Response.string user
        | Ok (Cookie.Absent | Cookie.Invalid _) -> Response.error 401 "log in"
        | Error bad_request -> bad_request
    ]} *)

val set_signed :
  keys:Signed.keys ->
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
(** [set_signed ~keys name value response] is {!set} of
    {!Signed.sign}[ keys ~name value], with secure defaults: [Path=/], [Secure]
    (the browser sends it over HTTPS only; pass [~secure:false] for plain-HTTP
    development, which browsers allow on [localhost]), [HttpOnly] (scripts
    cannot read it) and [SameSite=Lax] (not sent with cross-site subrequests or
    forms that [POST]). Any bytes may be in [value].

    Raises [Invalid_argument] as {!set_cookie}. *)

type signed =
  | Valid of string  (** Signed by one of the keys: the value as set. *)
  | Absent  (** No cookie by that name. *)
  | Invalid of Signed.error  (** Present, but unsigned or tampered with. *)

val get_signed :
  keys:Signed.keys -> Handler.request -> string -> (signed, Response.t) result
(** [get_signed ~keys r name] checks the first cookie called [name] ({!get})
    against [keys], in constant time; [Error] is {!get}'s [400] for a malformed
    [Cookie] field. *)

(** {1 Encrypted cookies}

    An encrypted cookie can be neither read nor changed by the browser or anyone
    who copies it: AES-256-GCM with a fresh nonce per cookie and the cookie's
    name authenticated with it (see {!Encrypted} for keys and rotation). It can
    still be replayed as a whole until it expires: put an expiry inside the
    value if an old copy must stop working.

    {[
      let keys = Encrypted.keys [ Token.random_bytes 32 ]

      let remember _r =
        Response.string "saved" |> Cookie.set_encrypted ~keys "draft" "secret"

      let recall r =
        match Cookie.get_encrypted ~keys r "draft" with
        | Ok (Cookie.Valid draft) -> Response.string draft
        | Ok (Cookie.Absent | Cookie.Invalid _) -> Response.string ""
        | Error bad_request -> bad_request
    ]} *)

val set_encrypted :
  keys:Encrypted.keys ->
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
(** [set_encrypted ~keys name value response] is {!set} of
    {!Encrypted.encrypt}[ keys ~name value], with {!set_signed}'s secure
    defaults ([Path=/], [Secure], [HttpOnly], [SameSite=Lax]). Any bytes may be
    in [value]; browsers keep cookies up to about 4096 bytes, name and
    attributes included, so [value] should stay under about 2900 bytes.

    Raises [Invalid_argument] as {!set_cookie}. *)

val get_encrypted :
  keys:Encrypted.keys ->
  Handler.request ->
  string ->
  (signed, Response.t) result
(** [get_encrypted ~keys r name] decrypts the first cookie called [name]
    ({!get}) with [keys]: [Valid value], [Absent], or [Invalid e] for a cookie
    that is not one {!set_encrypted} made ({!Encrypted.decrypt}'s error);
    [Error] is {!get}'s [400] for a malformed [Cookie] field. *)
