(** Request bodies sent by HTML forms.

    Reading a body blocks the handler's fiber until it has arrived (other
    connections are served meanwhile); it is bounded by the route's body limit
    ({!Router.add}'s [max_body], else the server's), beyond which the client
    gets [413]. Call these from the handler's fiber or a fiber it forked, never
    from a pool task (see {!Body}). Cancelled with the handler (timeout,
    shutdown): the read raises {!Braid.Cancelled}. *)

val media_type : Handler.request -> string option
(** [media_type r] is the media type of [r]'s [Content-Type], lower-cased,
    without parameters: ["multipart/form-data"] for
    [multipart/form-data; boundary=x]. *)

val urlencoded :
  ?csrf:bool -> Handler.request -> ((string * string) list, Response.t) result
(** [urlencoded r] is the decoded [application/x-www-form-urlencoded] body of
    [r] ({!Query.decode}). [Error] is the answer the client deserves: [415] if
    the [Content-Type] is another one, [400] for a malformed percent-encoding,
    the body's own status ([400], [408], [413]) if it could not be read.

    Where a {!Session.middleware} is in force, the form must carry one valid
    [csrf_token] field ({!Csrf.tag}), which is then left out of the result;
    without it, or with a forged or stale one, the answer is a [403]
    ({!Csrf.check_form}). [~csrf:false] turns the check off, for a form that
    another site may legitimately post (a payment provider's callback, which
    must then authenticate itself otherwise). *)

val field : (string * string) list -> string -> (string, Response.t) result
(** [field form name] is the value of [name] in [form] (its first, as sent: a
    password keeps its spaces); a [400] saying that [name] is required if it is
    missing or empty. So a handler reads what it needs in one step each:
    {[
      let log_in r =
        let open Handler.Syntax in
        let* form = Form.urlencoded r in
        let* user = Form.field form "user" in
        let* _password = Form.field form "password" in
        Response.string ("hello " ^ user)
    ]} *)
