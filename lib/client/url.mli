(** Absolute [http] and [https] URLs, as a client needs them: where to connect,
    and the request-target to send (RFC 9110 §4.2, RFC 3986).

    {[
      let target =
        match Url.of_string "https://example.com/search?q=ocaml" with
        | Ok url -> Url.target url (* "/search?q=ocaml" *)
        | Error _ -> ""
    ]} *)

type scheme = Http | Https

type t = private {
  scheme : scheme;
  host : string;
      (** A registered name (lowercased) or an IP literal; an IPv6 literal
          without its brackets. *)
  port : int;  (** The written port, else 80 or 443. *)
  path : string;  (** ["/"] at least; as written (not decoded). *)
  query : string option;  (** After ["?"], as written. *)
}

val of_string : string -> (t, string) result
(** [of_string s] reads [scheme://host[:port][/path][?query][#fragment]]. The
    fragment is dropped (never sent). Userinfo ([user@]) is refused rather than
    sent as credentials by surprise; so are other schemes, an empty host, a port
    out of 1..65535, and bytes a request-target may not hold (controls, spaces:
    percent-encode them). *)

val target : t -> string
(** [target t] is the origin-form request-target: [path] and [?query]. *)

val authority : t -> string
(** [authority t] is the [Host] field's value: the host, bracketed if IPv6, with
    [:port] unless it is the scheme's default. *)

val origin : t -> string
(** [origin t] is ["scheme://host:port"] with the port always written: the key
    of a connection pool. *)

val with_target : t -> string -> (t, string) result
(** [with_target t target] is [t] with the origin-form request-target [target]
    (a path, and a query after ["?"]) in place of its own: for a caller that
    keeps one parsed origin and sends many targets to it (a reverse proxy).
    [Error] if [target] does not start with ["/"] or holds bytes a
    request-target may not. *)

val resolve : t -> string -> (t, string) result
(** [resolve base reference] is the URL a [Location] field [reference] names,
    read against [base]: an absolute URL, a network-path reference
    ([//host/path]), an absolute path ([/path]) or a relative path (merged with
    [base]'s directory; dot segments are removed, RFC 3986 §5.2). *)

val to_string : t -> string
val pp : Format.formatter -> t -> unit
