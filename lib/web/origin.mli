(** Whether a browser's [Origin] names the server a request was sent to. Pure;
    any domain. Used by {!Websocket.accept} and {!Csrf.check_origin}. *)

val same_origin : host:string -> string -> bool
(** [same_origin ~host origin] is [true] if the serialised origin [origin]
    (["https://example.com:8443"]) has the host and port of the [Host] field
    [host]. A port left out is the default of the origin's scheme on both sides
    ([80] for [http] and [ws], [443] for [https] and [wss]); a written port is
    digits only; hosts compare case-insensitively; anything malformed matches
    nothing. *)
