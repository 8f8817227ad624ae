(** A minimal WebSocket client for the benchmark's load (RFC 6455, the client's
    side): the opening handshake, masked text frames out, whole unfragmented
    frames in. Runs in a fiber of a {!Braid_io.run} loop; every call blocks only
    its fiber. Anything unexpected (a close frame, the end of the stream, a
    fragmented or binary message, a bad handshake) raises [Failure]: the
    benchmark counts the run as failed. *)

type t

val connect : sw:Braid.Switch.t -> port:int -> path:string -> t
(** [connect ~sw ~port ~path] opens ws://127.0.0.1:[port][path] (no subprotocol,
    no extension: no compression) and checks the [101] and its
    [Sec-WebSocket-Accept]; the socket is closed when [sw] finishes.
    @raise Failure if the server does not accept. *)

val send_text : t -> string -> unit
(** [send_text t s] sends [s] as one masked text frame. *)

val receive : t -> string
(** [receive t] is the payload of the next text frame; pings are answered with a
    pong, pongs dropped.
    @raise Failure on anything else. *)

val close : t -> unit
(** [close t] sends a close frame (1000) and does not wait for the answer. *)
