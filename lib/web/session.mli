(** Sessions: string values kept for one browser across requests, behind a
    cookie; with expiry, rotation at log-in and invalidation at log-out.

    {!middleware} loads the session a request's cookie names, makes it the
    session of that request while the handler runs, and after the handler saves
    it if it changed and sets (or refreshes, or deletes) the cookie on the
    response, whatever its status. Handlers read and change it with {!get},
    {!set}, {!remove}, {!rotate} and {!invalidate}. The session is found through
    the fiber ({!Field}), not the request record: these functions work in the
    handler, in fibers it forks and in pool tasks it submits (on any domain; a
    change is atomic), and raise [Invalid_argument] where no {!middleware} is in
    force. Their request argument is the request being answered.

    {[
      let store = Session.memory ()

      let login r =
        (* After checking the password: a new id against session fixation. *)
        Session.rotate r;
        Session.set r "user" "ada";
        Response.redirect ~status:303 "/"

      let home r =
        Response.string
          (Option.value (Session.get r "user") ~default:"not logged in")

      let logout r =
        Session.invalidate r;
        Response.redirect ~status:303 "/"

      let app =
        Router.(
          empty
          |> use (Session.middleware store)
          |> get "/" home |> post "/login" login |> post "/logout" logout)
    ]}

    {b A session exists once something is put in it} ({!set}, {!rotate}, a
    {!Csrf} token, a {!Flash} message): until then a request costs no store
    access beyond the lookup of a cookie it sent, and sets no cookie.

    {b Expiry.} A session ends [idle_timeout] after it was last saved or
    [lifetime] after it was created, whichever comes first; an expired one is a
    fresh, empty session (its record is deleted, its cookie dropped). An active
    session slides: it is saved again, and its cookie refreshed, when a tenth of
    [idle_timeout] has passed since it was last saved, not on every request. *)

(** {1 Stores} *)

type store
(** Where sessions live. *)

val memory : ?sweep_interval:float -> ?max_sessions:int -> unit -> store
(** [memory ()] keeps sessions in this process: one table shared by every domain
    (behind a mutex held for a hash-table operation, never across I/O). Expired
    sessions are swept out while saving, at most once per [sweep_interval]
    seconds (default 60), so they do not accumulate. At most [max_sessions]
    (default 100,000) are kept: a new session beyond that first sweeps the
    expired ones, then drops the tenth that would expire soonest. Anonymous
    visitors get a session as soon as a page renders a {!Csrf.tag}, so without
    the cap a flood of new clients would grow the table without bound; with it,
    such a flood can end idle sessions early (their users log in again). Raises
    [Invalid_argument] if [max_sessions < 1]. Sessions are lost when the process
    stops, and not shared between instances behind a load balancer: use a
    server-side store of a database ({!of_backend}) for that. *)

val cookie : keys:Encrypted.keys -> store
(** [cookie ~keys] keeps the whole session in its cookie, encrypted and
    authenticated ({!Encrypted}): nothing on the server, shared by every
    instance that has [keys]. The browser can neither read nor change it; a
    tampered cookie is a fresh session. Two limits: the session must stay small
    (see {!middleware}'s [max_cookie_bytes]; {!set} raises [Invalid_argument]
    beyond it), and {!invalidate} and {!rotate} cannot revoke a copy of the old
    cookie, which stays valid until it expires. Prefer a server-side store where
    log-out must end the session everywhere. *)

type backend = {
  find : key:string -> now:float -> string option;
      (** [find ~key ~now] is the data saved under [key], if its expiry is after
          [now]. *)
  save : key:string -> data:string -> expires:float -> now:float -> unit;
      (** [save ~key ~data ~expires ~now] stores [data] under [key] (replacing
          what was there) until [expires] (seconds since the epoch). [now] is
          the current time, for a store that sweeps expired records as it goes.
      *)
  delete : key:string -> unit;
      (** [delete ~key] forgets [key]'s record, if any. *)
}
(** A server-side store, for sessions in a database shared by several instances
    (a table [(key text primary key, data text, expires float)]). [key] is not
    the session's id but the base64url of its SHA-256 (43 characters): lookups
    then take no time that depends on a secret, and a copy of the table holds no
    working cookie. [data] is ASCII text of a few hundred bytes, the session
    encoded; store it as it is. The functions are called in the request's fiber,
    from {!middleware}: they may block that fiber (do I/O), never the domain for
    long; they may be called from several domains at once. An exception they
    raise is the handler's ([500]); [find] may raise {!Braid.Cancelled} when the
    request is cancelled. *)

val of_backend : backend -> store
(** [of_backend b] is the store that keeps sessions with [b]. *)

(** {1 The middleware} *)

val middleware :
  ?cookie_name:string ->
  ?secure:bool ->
  ?idle_timeout:float ->
  ?lifetime:float ->
  ?max_cookie_bytes:int ->
  store ->
  Router.middleware
(** [middleware store] gives every request under it a session kept in [store].
    Install it with {!Router.use} (or on a {!Router.scope}). The cookie is set
    with [Path=/], [Secure], [HttpOnly] and [SameSite=Lax] and no [Domain], and
    named [__Host-session]: browsers accept a [__Host-] cookie only from a
    secure page, for the whole host, without [Domain], so neither a sibling
    subdomain nor a plain-HTTP page can plant one (a planted session id is how
    session fixation starts). Its [Max-Age] is the time the session has left.

    With [~secure:false] the cookie lacks [Secure] and is named [session]: for
    development over plain HTTP on a host other than [localhost] (browsers
    accept [Secure] cookies from [http://localhost], so the default works
    there). The server reads the cookie whatever its flags, so tests through
    [Braid_server.Testing] work with the defaults.

    [idle_timeout] (default 24 hours) and [lifetime] (default 14 days) are in
    seconds. [max_cookie_bytes] (default 4000) bounds the encrypted cookie of
    the {!cookie} store (browsers keep about 4096 bytes per cookie).

    A malformed [Cookie] field is answered [400] ({!Cookie.get}). The session is
    saved after the handler returns, whatever its status (an error page keeps
    the session's changes); not if the handler raises. A
    {{!Response.stream}stream}'s function still sees the session, but may not
    change it (its head, with the cookie, is built first): {!set} and the others
    raise [Invalid_argument] there.

    Raises [Invalid_argument] if [cookie_name] is not a token, starts with
    [__Host-] without [secure], or a timeout is not positive. *)

(** {1 The request's session} *)

val get : Handler.request -> string -> string option
(** [get r name] is the value of [name] in [r]'s session. *)

val set : Handler.request -> string -> string -> unit
(** [set r name value] sets [name] to [value] (any bytes).

    Raises [Invalid_argument] if the {!cookie} store's cookie would go above
    [max_cookie_bytes]. *)

val remove : Handler.request -> string -> unit
(** [remove r name] removes [name] from the session. *)

val rotate : Handler.request -> unit
(** [rotate r] gives the session a new id (and a new {!Csrf} secret, so older
    tokens are refused), keeping its values; the old id stops working when the
    response leaves. Call it when the user logs in or gains a privilege: an id
    an attacker planted or saw before is then worthless (session fixation). *)

val invalidate : Handler.request -> unit
(** [invalidate r] ends the session: its record is deleted and its cookie
    dropped when the response leaves. What the handler sets afterwards goes into
    a new session with a new id (a "logged out" {!Flash} message). *)

(**/**)

(* For Csrf and Flash: not exported by Braid_web. *)
module Private : sig
  val in_force : unit -> bool

  val csrf_secret : create:bool -> string option
  (** The session's CSRF secret; with [create], made if missing. *)

  val add_flash : Handler.request -> category:string -> string -> unit
  val take_flash : Handler.request -> (string * string) list
end
