(** A self-signed certificate for serving HTTPS in development, made on demand
    and kept in a state directory: [braid serve --dev] uses it, and so can a
    program or a test that wants HTTPS on [localhost] without a hand-made
    certificate.

    {[
      let serve_https_locally () =
        let dir = Braid_tls.Dev_certificate.default_directory () in
        match Braid_tls.Dev_certificate.ensure ~dir () with
        | Error msg -> prerr_endline msg
        | Ok cert ->
            Printf.printf "trust %s (curl --cacert %s)\n" cert.certificate
              cert.certificate
    ]}

    The certificate is an end-entity certificate (not a CA) signed by its own
    key: an EC P-256 key, SHA-256, [subjectAltName] the [names] (DNS names and
    IP addresses), [serverAuth], valid from five minutes before it is made
    (clock skew) for [validity_days]. A client trusts it by trusting the file
    itself ([curl --cacert FILE], [openssl verify -CAfile FILE FILE], a
    browser's certificate exceptions or trust store).

    {b Never in production}: the key lies unencrypted on disk (mode [0600]), and
    the certificate vouches for nothing but itself.

    Blocks the calling thread (the disk, and a few milliseconds to make a key):
    call it at start-up, or through [Braid_io.Blocking.run]. Any domain; two
    processes making one directory's certificate at once each write a complete
    pair (files are replaced by rename), but the pair on disk may then mix them:
    run one at a time. *)

type t = {
  certificate : string;  (** The certificate's file (PEM). *)
  key : string;  (** Its private key's file (PEM, PKCS #8, mode [0600]). *)
  names : string list;  (** The names it holds, as asked. *)
  not_after : float;  (** When it expires, seconds since the epoch. *)
  created : bool;  (** Made by this call, rather than found valid. *)
}

val default_names : string list
(** [["localhost"; "127.0.0.1"; "::1"]]. *)

val default_directory : unit -> string
(** [$XDG_STATE_HOME/braid/dev-certificate], or
    [$HOME/.local/state/braid/dev-certificate] when [XDG_STATE_HOME] is unset or
    empty (the XDG base directory specification), or
    [/tmp/braid-dev-certificate-UID] without [HOME]. *)

val ensure :
  ?names:string list ->
  ?validity_days:int ->
  ?now:float ->
  dir:string ->
  unit ->
  (t, string) result
(** [ensure ~dir ()] is the certificate in [dir] ([cert.pem] and [key.pem]),
    made anew unless one is there that holds exactly [names] (default
    {!default_names}, in any order) and is valid for at least one more day after
    [now] (default the current time) and whose key file has mode [0600]. A new
    one is valid [validity_days] (default 30) from [now]. [dir] is created (mode
    [0700]) with its missing parents.

    [Error] says which file could not be written or read and why; a [names] that
    is empty or holds a name with a comma is an [Error] too. *)
