(** The bounded pool of connections behind every driver's [pool] (see
    {!Braid_db.S}), generic in the connection type. Not thread-safe: one event
    loop uses a pool, which checks it ([Invalid_argument] otherwise). *)

type 'c t
type stats = { open_connections : int; idle : int; waiting : int }

val create :
  sw:Braid.Switch.t ->
  max_size:int ->
  wait_timeout:float ->
  max_idle:float ->
  connect:(unit -> ('c, Error.t) result) ->
  close:('c -> unit) ->
  is_usable:('c -> bool) ->
  'c t
(** [create ~sw ...] is an empty pool of at most [max_size] connections, opened
    by [connect] on demand. When [sw] finishes, the idle connections are closed
    and the ones in use are closed when given back. *)

val use : 'c t -> ('c -> ('a, Error.t) result) -> ('a, Error.t) result
(** [use pool f] lends a connection to [f] and takes it back: see
    {!Braid_db.S.use}. *)

val stats : 'c t -> stats
