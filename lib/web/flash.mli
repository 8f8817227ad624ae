(** Flash messages: a message set while answering one request and shown by the
    next, once ("Note saved" after the redirect that follows a [POST]).

    Messages are kept in the session ({!Session}): a {!Session.middleware} must
    be in force (else these raise [Invalid_argument]), and adding one creates
    the session if needed. {!take} returns the messages the request came with,
    never those added while answering it, and removes them.

    {[
      let save r =
        Flash.add r "Note saved";
        Response.redirect ~status:303 "/notes"

      let notes r =
        let messages =
          List.map
            (fun (category, text) ->
              Printf.sprintf "<p class=\"%s\">%s</p>" (Html.escape category)
                (Html.escape text))
            (Flash.take r)
        in
        Response.html (String.concat "" messages)
    ]}

    Never blocks; may run in the handler's fibers and pool tasks. *)

val add : ?category:string -> Handler.request -> string -> unit
(** [add r message] keeps [message] (in [category], default ["info"]) for the
    next request that {!take}s messages.

    Raises [Invalid_argument] as {!Session.set}. *)

val take : Handler.request -> (string * string) list
(** [take r] is every message [(category, text)] the request came with, oldest
    first, and removes them from the session: a message is read once. *)
