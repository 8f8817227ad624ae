(** Client addresses as the server compares them. Internal to the server.

    On a dual-stack listener ([--host ::]) an IPv4 client is reported as an
    IPv4-mapped IPv6 address ([::ffff:192.0.2.1], RFC 4291 §2.5.5.2): the same
    client as [192.0.2.1] on an IPv4 listener. Every check on an address (the
    metrics' allow list and loopback rule, the per-client cap) and every report
    of one (handlers' [peer], the access log) sees the IPv4 form, so a client is
    one client whichever listener it reached. Pure. *)

val unmapped : Unix.sockaddr -> Unix.sockaddr
(** [unmapped a] is [a] with an IPv4-mapped IPv6 address replaced by the IPv4
    address it maps (the port kept); any other address unchanged. *)

val unmapped_inet : Unix.inet_addr -> Unix.inet_addr
(** [unmapped_inet ip] is {!unmapped} for an address alone. *)

val is_loopback : Unix.sockaddr -> bool
(** [is_loopback a]: [127.0.0.0/8], [::1], an IPv4-mapped loopback address, or a
    Unix-domain socket (a local client). *)
