(** Real peers for the client and proxy tests: a Braid server on its own domain,
    Python's [http.server] (plain or TLS), nginx, raw scripted TCP servers, and
    a test CA made by the openssl command. Each starts on a port the kernel
    chooses and is stopped (process killed, domain joined) when the function
    given returns or raises. *)

val braid :
  ?tls:string * string ->
  ?domains:int ->
  Braid_web.Router.t ->
  (port:int -> tls_port:int option -> 'a) ->
  'a
(** [braid router f] serves [router] on 127.0.0.1 (and HTTPS with
    [tls = (chain, key)]) while [f] runs. *)

type certs = { ca : string; chain : string; key : string }

val certs : unit -> certs
(** A test CA and a leaf for [localhost] (DNS:localhost only, so [127.0.0.1]
    does not match it), made once per process. *)

val python_http : ?tls:certs -> dir:string -> (port:int -> 'a) -> 'a
(** Python's [http.server] serving the files of [dir] (HTTP/1.0 answers),
    wrapped in TLS with [tls]'s leaf if given. *)

val nginx : dir:string -> (port:int -> 'a) -> 'a
(** nginx serving the files of [dir], keep-alive on, adding
    [X-Connection: $connection] to every response. *)

val free_port : unit -> int
(** A port nothing listens on now. *)

val temp_dir : string -> string
val write_file : string -> string -> unit
