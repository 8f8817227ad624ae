(** Responses from {{:https://ocsigen.org/tyxml/} TyXML} documents: HTML built
    from typed values instead of strings, so that a page is well formed by
    construction and what a user typed is escaped on the way out.

    {[
      let greeting name =
        let open Tyxml.Html in
        Braid_tyxml.page
          (html
             (head (title (txt "Greeting")) [])
             (body [ h1 [ txt ("Hello, " ^ name) ] ]))
    ]}

    With [name = "<script>"], the page shows the text [Hello, <script>]: the
    wire carries [Hello, &lt;script&gt;].

    {2 What is escaped}

    TyXML's printer escapes every text node ([Tyxml.Html.txt]) and every
    attribute value (written in double quotes): [<], [>], [&] and the double
    quote become entities, and control characters other than tab, CR and LF
    numeric references. That makes user input safe in element content and
    attribute values, with three exceptions that no printer can judge:
    - [Tyxml.Html.Unsafe] inserts its text as it is: keep it for constants;
    - a URL attribute ([a_href], [a_src], [a_action]) is escaped, not checked: a
      [javascript:] URL needs no special character, so check the scheme of a URL
      that comes from a user;
    - the text of [script] and [style] is escaped like any text, which the
      browser does not undo there: a script with [<] or [&] in it breaks. Serve
      scripts as static files, or put a constant one in with
      [Tyxml.Html.Unsafe.data], never with user data in it.

    Pure functions: they block nothing and may run on any domain. The document
    is printed into one buffer, without indentation (which would change the text
    of inline elements), and sent as one string. *)

val page :
  ?status:int ->
  ?headers:(string * string) list ->
  Tyxml.Html.doc ->
  Braid_web.Response.t
(** [page doc] is a [200] (or [status]) with [doc] printed after
    [<!DOCTYPE html>], as [text/html; charset=utf-8]. The [html] element gets
    TyXML's [xmlns] attribute, which HTML parsers ignore.

    Raises [Invalid_argument] as {!Braid_web.Response.make} does for an invalid
    [status] or field of [headers]. *)

val fragment :
  ?status:int ->
  ?headers:(string * string) list ->
  _ Tyxml.Html.elt ->
  Braid_web.Response.t
(** [fragment elt] is a [200] (or [status]) with [elt] alone, without doctype,
    as [text/html; charset=utf-8]: a partial response for a page's script to
    insert (an [li] for a list, a form with its errors).

    {[
      let item text = Braid_tyxml.fragment Tyxml.Html.(li [ txt text ])
    ]}

    Raises [Invalid_argument] as {!page}. *)

val string_of_elt : _ Tyxml.Html.elt -> string
(** [string_of_elt elt] is [elt] printed as {!fragment} sends it: for HTML that
    goes out another way, such as a WebSocket message
    ([Braid_web.Websocket.send_text]) that a page inserts. *)

val csrf_input :
  Braid_web.Handler.request -> [> Html_types.input ] Tyxml.Html.elt
(** [csrf_input request] is the hidden field that carries the session's CSRF
    token in a form ([Braid_web.Csrf.tag] as a TyXML element): put it in every
    form that posts to the application, where [Braid_web.Form.urlencoded] and
    [Braid_web.Multipart] check it (first in a [multipart/form-data] form, so it
    comes before the files). Needs [Braid_web.Session.middleware] in force, as
    [Braid_web.Csrf.token]. *)
