(** Values signed with HMAC-SHA256 (RFC 2104, FIPS 180-4), so that a value the
    server handed out (a cookie, a hidden field, a link) comes back unchanged or
    is refused. The value is not hidden: anyone can read it (it is base64); keep
    secrets on the server and sign only a reference to them.

    Pure OCaml on the [sha] library, no OpenSSL: braid_web stays free of the TLS
    layer. Pure functions: they block nothing (a few microseconds) and may run
    on any domain.

    {b Keys} are the application's: at least 32 random bytes each (e.g.
    {!Token.random_bytes}[ 32], stored with the application's other secrets).
    {b Rotation}: {!sign} uses the first key, {!verify} accepts any, so a new
    key goes first, and the old one stays second until the values it signed have
    expired.

    {[
      let keys = Signed.keys [ Token.random_bytes 32 ]
      let v = Signed.sign keys ~name:"user" "ada"

      let () =
        assert (Signed.verify keys ~name:"user" v = Ok "ada");
        assert (Signed.verify keys ~name:"admin" v = Error Signed.Tampered)
    ]} *)

val hmac_sha256 : key:string -> string -> string
(** [hmac_sha256 ~key message] is the 32-byte HMAC-SHA256 of [message] (RFC
    2104; any key length). *)

type keys
(** A non-empty list of keys, the first one signing. *)

val keys : string list -> keys
(** [keys [k1; k2]] signs with [k1] and verifies with [k1] or [k2].

    Raises [Invalid_argument] if the list is empty or a key is shorter than 32
    bytes (a short or typed-in key can be guessed offline from one signed
    value). *)

val sign : keys -> name:string -> string -> string
(** [sign keys ~name value] is [value] with its signature, as
    [BASE64URL(value).BASE64URL(mac)] (no padding): cookie-octets, safe in a
    URL. The MAC covers [name] too, so a value signed for one cookie or field is
    refused for another. Any bytes may be in [value]. *)

type error =
  | Not_signed  (** Not of the form {!sign} produces: never signed, or cut. *)
  | Tampered  (** Well formed, but no key's signature matches. *)

val verify : keys -> name:string -> string -> (string, error) result
(** [verify keys ~name signed] is [Ok value] if [signed] is [sign k ~name value]
    for one of [keys]. Each MAC is compared in constant time ({!Token.equal}).
*)
