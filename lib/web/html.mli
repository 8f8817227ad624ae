(** Escaping text for HTML, so that what a user typed is shown, never run.

    Pure functions: they block nothing and may run anywhere. Bytes from 0x80
    pass through unchanged, so UTF-8 stays UTF-8.

    {[
      let page name =
        Response.html
          (Printf.sprintf "<p title=\"%s\">Hello, %s</p>" (Html.escape name)
             (Html.escape name))
    ]}

    For a whole page, {!Response.html} sends the string with its type. *)

val escape : string -> string
(** [escape s] replaces [&], [<], [>], the double quote and the single quote
    with [&amp;], [&lt;], [&gt;], [&quot;] and [&#x27;]. Safe in element content
    and in attribute values in double or single quotes; not inside [<script>] or
    [<style>], nor in an unquoted attribute (see {!attribute}), nor as a URL (a
    [javascript:] URL needs no special character: check the scheme). *)

val attribute : string -> string
(** [attribute s] replaces every ASCII byte other than letters and digits with
    [&#xHH;] (OWASP's rule for attributes): safe even in an unquoted attribute
    value, at the cost of longer output. Prefer quoting and {!escape}. *)
