(** The authority grammar of RFC 3986 §3.2 that the request parser checks: the
    [Host] field (RFC 9110 §7.2) and the authority-form target of [CONNECT] (RFC
    9112 §3.2.3); a server checks with it an authority it takes from elsewhere
    (an absolute-form target's). Pure, no allocation. *)

val is_host_field : string -> bool
(** [is_host_field s]: [s] is [uri-host [ ":" port ]], with [port = *DIGIT]: an
    IP-literal in brackets (an IPv6 address or an IPvFuture), or a reg-name (an
    IPv4 address is one), possibly empty. *)

val is_authority_form : string -> bool
(** [is_authority_form s]: [s] is [uri-host ":" port] with a host and a port
    that are not empty, as [CONNECT] needs. *)
