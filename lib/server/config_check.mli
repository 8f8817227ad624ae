(** The checks a {!Config.t} passes before a server starts with it or a reload
    puts it in force: what no connection could work with is refused here, with a
    message naming the setting, rather than found by the first connection.
    Internal to the server ({!Server.check_config} is the public face).

    Called from any domain or thread; [check] looks at the file system (the
    document root and the body temporary directory) and [load_certificates]
    reads the certificate and key files, both blocking the calling thread (start
    and reload are rare, and run before or beside the loops). Neither performs
    effects, so cancellation does not reach them. *)

val check : Config.t -> (Config.t, string) result
(** [check c] is [c] with its root made absolute and free of symbolic links, or
    why it is unusable: a root that is missing or not a directory, buffers or
    limits that are not positive, timeouts that are not positive or exceed
    {!Config.max_seconds}, a negative linger time, fewer than one domain, an
    index that is not a plain file name, a body temporary directory that is not
    a directory, HTTPS without a certificate or with a certificate or key
    missing its pair. *)

val load_certificates :
  Config.t -> (Braid_tls.Server_context.t option, string) result
(** [load_certificates c] is the TLS context of [c.tls]'s certificates, read now
    ([None] without HTTPS), or why one failed to load. *)
