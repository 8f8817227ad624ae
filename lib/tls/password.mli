(** Password hashing with Argon2id (RFC 9106), the memory-hard KDF that won the
    Password Hashing Competition: guessing a password from its hash costs an
    attacker memory as well as time, which GPUs and ASICs do not make cheap.

    Through OpenSSL 3.2+'s [EVP_KDF] ["ARGON2ID"] (a small C stub); the salt is
    16 bytes from OpenSSL's CSPRNG ([RAND_bytes], seeded by the kernel). It
    lives in [braid_tls] because that library already links OpenSSL: a library
    of its own would be a package of its own for one module, and [braid_web]
    stays free of OpenSSL.

    {b Format}: a PHC string, self-describing, as the reference implementation,
    libsodium, PHP and Python's [argon2-cffi] write it:
    [$argon2id$v=19$m=19456,t=2,p=1$SALT$HASH], with [SALT] and [HASH] in base64
    without padding. {!verify} reads the parameters from the string, so hashes
    made with older parameters still verify after {!default} changes
    ({!needs_rehash} says when to replace one at the next log-in).

    {b Blocking}: {!hash} and {!verify} take tens of milliseconds of CPU (about
    20 ms here with {!default}) and block the calling thread throughout (they
    release the domain's runtime lock, so other threads of the domain run). On
    the event loop that would stall every other connection of the domain: in a
    handler, call {!hash_on_pool} and {!verify_on_pool}, which run them on a
    {!Braid_io.Blocking} pool and suspend only the calling fiber. Any domain or
    thread may call any of these functions.

    {[
      let stored = Braid_tls.Password.hash_on_pool "correct horse"
      let ok = Braid_tls.Password.verify_on_pool "correct horse" ~hash:stored
    ]} *)

type params = {
  memory_kib : int;  (** [m]: memory in KiB, at least [8 * parallelism]. *)
  iterations : int;  (** [t]: passes over the memory, at least 1. *)
  parallelism : int;  (** [p]: lanes, 1 to 255; computed on one thread. *)
}

val default : params
(** [m=19456] (19 MiB), [t=2], [p=1]: OWASP's recommendation for Argon2id
    (Password Storage Cheat Sheet, 2024), about 20 ms on one core here. More
    memory is stronger; memory times concurrent log-ins must fit the server. *)

val hash : ?params:params -> string -> string
(** [hash password] is the PHC string of [password] under a fresh random salt,
    with [params] (default {!default}) and a 32-byte hash. Blocks the calling
    thread (see above).

    Raises [Invalid_argument] if [params] are out of the ranges above or
    [memory_kib > 4 GiB]; [Failure] if OpenSSL fails (out of memory). *)

val verify : string -> hash:string -> bool
(** [verify password ~hash] is [true] if [hash] is {!hash}'s (or another
    Argon2id implementation's) PHC string of [password]. The hashes are compared
    in constant time. [false] for a string that is not an Argon2id version 19
    PHC string, or whose parameters are out of range (so a tampered stored hash
    cannot ask for terabytes). Blocks as {!hash}. *)

val params_of_hash : string -> (params, string) result
(** [params_of_hash h] is the parameters [h] was made with, or [Error why] if it
    is not an Argon2id v=19 PHC string within the ranges above. *)

val needs_rehash : ?params:params -> string -> bool
(** [needs_rehash h] is [true] unless [h] was made with exactly [params]
    (default {!default}): after a successful {!verify}, store [hash password] in
    its place. *)

val hash_on_pool :
  ?pool:Braid_io.Blocking.t -> ?params:params -> string -> string
(** [hash_on_pool password] is {!hash} run by {!Braid_io.Blocking.run} on [pool]
    (default its current one): suspends only the calling fiber. On cancellation
    it raises {!Braid.Cancelled} as [Blocking.run] does. *)

val verify_on_pool : ?pool:Braid_io.Blocking.t -> string -> hash:string -> bool
(** [verify_on_pool password ~hash] is {!verify} as {!hash_on_pool} runs
    {!hash}. *)

val derive :
  ?secret:string ->
  ?ad:string ->
  params ->
  salt:string ->
  length:int ->
  string ->
  string
(** [derive params ~salt ~length password] is the raw [length]-byte Argon2id tag
    (RFC 9106 §3), with the optional secret key [K] (a pepper kept out of the
    database) and associated data [X]. For other formats and for known-answer
    tests; {!hash} is the one to store. Blocks as {!hash}.

    Raises [Invalid_argument] if [params] are out of range, [salt] is shorter
    than 8 bytes or [length < 4]. *)
