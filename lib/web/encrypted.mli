(** Values encrypted and authenticated with AES-256-GCM, so that a value the
    server handed out (a cookie, a hidden field) can be neither read nor changed
    by whoever holds it: it comes back as the server sealed it, or not at all.
    {!Signed} hides nothing; use this for what the client must not read (a whole
    session, {!Session.cookie}).

    The cipher is OpenSSL libcrypto's (a small C stub); keys, nonces and the
    format are this module's. Pure functions: they block nothing (microseconds
    for a cookie) and may run on any domain.

    {b Keys} are the application's secrets, at least 32 random bytes each
    ({!Token.random_bytes}[ 32]), stored with its configuration. The cipher
    never uses a secret directly: it uses HMAC-SHA256 of a fixed label under the
    secret, so the same secret may also serve {!Signed} without the two uses
    meeting. {b Rotation}: {!encrypt} uses the first key, {!decrypt} tries each,
    so a new key goes first and the old one stays second until the values it
    sealed have expired.

    {b Nonces} are 12 random bytes drawn for every value, so sealing the same
    value twice gives different texts. A key should seal fewer than 2{^ 32}
    values (NIST SP 800-38D's bound for random nonces): rotate it long before.

    {[
      let keys = Encrypted.keys [ Token.random_bytes 32 ]
      let sealed = Encrypted.encrypt keys ~name:"cart" "3 apples"

      let () =
        assert (Encrypted.decrypt keys ~name:"cart" sealed = Ok "3 apples");
        assert (
          Encrypted.decrypt keys ~name:"basket" sealed = Error Signed.Tampered)
    ]} *)

type keys
(** A non-empty list of keys, derived from the secrets; the first encrypts. *)

val keys : string list -> keys
(** [keys [s1; s2]] encrypts with the key derived from [s1] and decrypts with
    that of [s1] or [s2].

    Raises [Invalid_argument] if the list is empty or a secret is shorter than
    32 bytes. *)

val encrypt : keys -> name:string -> string -> string
(** [encrypt keys ~name value] is [value] sealed under the first key, as
    [BASE64URL(version . nonce . ciphertext . tag)] without padding:
    cookie-octets, safe in a URL, about 39 characters longer than [4/3] of
    [value]. [name] (the cookie's or field's) is authenticated with it, so a
    value sealed for one name is refused under another. Any bytes may be in
    [value]. *)

val decrypt : keys -> name:string -> string -> (string, Signed.error) result
(** [decrypt keys ~name sealed] is [Ok value] if [sealed] is
    [encrypt k ~name value] for one of [keys]; [Error Not_signed] for a text
    {!encrypt} cannot produce (not base64url, too short, another version),
    [Error Tampered] if no key authenticates it (changed, cut, sealed under
    another name or by a key no longer listed). *)
