(** A broadcast room over WebSocket: every message a member sends is posted to
    every member (the sender too), through a {!Braid_web.Hub}, so members may
    live on different event loops. A member whose outbox is full (a client that
    stopped reading) is dropped at once with {!Braid_web.Websocket.abort} (close
    code 1013 when a close frame can still go out), even while its writer is
    blocked on the client's full socket, instead of slowing the room down: the
    hub's slow-subscriber policy ({!Braid_web.Hub.forward}).

    Used by [chat.exe] and by the [websocket] benchmark's server. *)

type t

val create : outbox_size:int -> t
(** An empty room; each member's outbox holds [outbox_size] messages. *)

val member : t -> ?name:string -> Braid_web.Websocket.t -> unit
(** [member room ws] serves [ws] as a member until it closes: the upgrade
    callback of {!Braid_web.Websocket.accept}. With [name], its arrival and
    departure are announced and its messages posted as ["name: text"]; without,
    messages are posted as they come and nothing is announced. Binary messages
    are refused with 1003. Blocks the calling fiber. *)
