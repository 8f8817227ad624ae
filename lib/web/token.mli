(** Secret random tokens: session identifiers, CSRF tokens, keys.

    The bytes come from the kernel's CSPRNG through getrandom(2) (a small C
    stub): no file descriptor to open or leak, nothing that fails in a chroot
    without [/dev]. getrandom blocks only until the kernel's pool is first
    seeded at boot; after that a call takes microseconds, so these functions may
    run on the event loop. Any domain or thread may call them.

    {[
      let session_id = Token.generate ()
      let csrf_ok ~expected ~given = Token.equal expected given
    ]} *)

val random_bytes : int -> string
(** [random_bytes n] is [n] bytes from the kernel's CSPRNG: raw, for keys
    ({!Signed.sign}'s) or salts.

    Raises [Invalid_argument] if [n < 0], [Failure] if the kernel refuses
    (getrandom(2) missing: Linux before 3.17). *)

val generate : ?bytes:int -> unit -> string
(** [generate ~bytes ()] is [bytes] (default 32: 256 bits, beyond guessing)
    random bytes in URL-safe base64 without padding (RFC 4648 §5): letters,
    digits, [-] and [_], ready for a cookie value, a URL or a form field. 32
    bytes give 43 characters.

    Raises [Invalid_argument] if [bytes < 16] (fewer than 128 bits could be
    guessed), [Failure] as {!random_bytes}. *)

val equal : string -> string -> bool
(** [equal a b] is [a = b], in a time that depends on the lengths only, not on
    where the strings differ: compare a secret a client sent with this, never
    with [=] or [String.equal], which stop at the first difference and let an
    attacker find the secret byte by byte from the response times. The length is
    not secret (it is public for every token here). *)
