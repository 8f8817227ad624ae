(** Cross-site request forgery: refusing a form or an API call that a page of
    another site made the user's browser send, with the user's cookies.

    {b Tokens.} Each session has a secret (made when a token is first asked for,
    replaced by {!Session.rotate}); a token is a random nonce and its
    HMAC-SHA256 under that secret, so each call gives a new text and all are
    valid while the session's secret lasts. Another site can neither read a
    token from the user's pages nor make one. A page puts {!tag} in each form
    that [POST]s; {!Form.urlencoded} and {!Multipart.fold} then check it by
    default wherever a {!Session.middleware} is in force, answering a missing or
    wrong token with a [403] (a multipart form must send its token before any
    file, which is then refused unread). A script sends {!token} in the
    [X-CSRF-Token] header, which {!require_header} checks.

    {[
      let form r =
        Response.html
          (Printf.sprintf
             {|<form method="post" action="/notes">%s
                 <input name="text"><button>Add</button></form>|}
             (Csrf.tag r))

      let add_note r =
        match Form.urlencoded r with
        | Ok fields -> Response.string (List.assoc "text" fields)
        | Error forbidden_or_bad -> forbidden_or_bad

      let app =
        Router.(
          empty
          |> use (Session.middleware (Session.memory ()))
          |> get "/notes" form |> post "/notes" add_note)
    ]}

    The session cookie's [SameSite=Lax] already keeps it off other sites'
    [POST]s in current browsers: tokens are the defence that does not depend on
    the browser. {!check_origin} is a third, for endpoints without a session.

    Like {!Session}'s, these functions find the session through the fiber: they
    raise [Invalid_argument] where no {!Session.middleware} is in force. They
    block nothing and may run in pool tasks. *)

val field_name : string
(** ["csrf_token"]: the name of the form field {!tag} makes. *)

val header_name : string
(** ["X-CSRF-Token"]: the request header {!check_header} reads. *)

val token : Handler.request -> string
(** [token r] is a new token for [r]'s session (64 base64url characters), for a
    page's script to send in [X-CSRF-Token] or a template to place. The first
    token of a session makes its secret, which creates the session (a cookie is
    set). *)

val tag : Handler.request -> string
(** [tag r] is [<input type="hidden" name="csrf_token" value="...">] with a
    {!token}, escaped: put it inside each [<form>], first (multipart forms must
    send it before their files). *)

val verify : Handler.request -> string -> (unit, Response.t) result
(** [verify r token] is [Ok ()] if [token] was made by {!token} for [r]'s
    session as it is now (not before a {!Session.rotate}); else a [403] saying
    that the page is stale. Constant time. *)

val check_form :
  Handler.request ->
  (string * string) list ->
  ((string * string) list, Response.t) result
(** [check_form r fields] is [fields] without their [csrf_token] if it holds
    exactly one, valid ({!verify}); else a [403] (missing, several, invalid).
    {!Form.urlencoded} calls it. *)

val check_header : Handler.request -> (unit, Response.t) result
(** [check_header r] {!verify}s [r]'s one [X-CSRF-Token] field: a [403] if it is
    missing, repeated or invalid. For an API handler that takes JSON. *)

val require_header : Router.middleware
(** [require_header] answers a request whose method is not [GET], [HEAD],
    [OPTIONS] or [TRACE] with {!check_header}'s [403] unless its token is valid.
    For a {!Router.scope} of JSON endpoints, inside {!Session.middleware}. *)

val check_origin : Handler.request -> (unit, Response.t) result
(** [check_origin r] is [Ok ()] if the request's [Origin] (or, without one, its
    [Referer]'s scheme, host and port) names the server of its [Host], with
    {!Websocket.accept}'s rule (a port left out is the scheme's default); a
    [403] otherwise: another site, [Origin: null], several [Origin] fields, or
    neither field (browsers send [Origin] with every cross-site [POST], and most
    a [Referer]). Behind a proxy that rewrites [Host], it compares with the
    rewritten one. Needs no session. *)
