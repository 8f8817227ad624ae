(** The bounded pool of connections behind every driver's [pool] (see
    {!Braid_db.S}), generic in the connection type. One value serves every event
    loop: each loop that uses it gets a share of its own (at most [max_size]
    connections, opened and closed on that loop), found without a lock. *)

type 'c t
type stats = { open_connections : int; idle : int; waiting : int }

val create :
  ?sw:Braid.Switch.t ->
  max_size:int ->
  wait_timeout:float ->
  max_idle:float ->
  connect:(sw:Braid.Switch.t -> ('c, Error.t) result) ->
  close:('c -> unit) ->
  is_usable:('c -> bool) ->
  unit ->
  'c t
(** [create ~sw ...] is an empty pool of at most [max_size] connections per
    loop, opened by [connect ~sw] on demand, with [sw] the switch that holds
    them on their loop (the pool's own [sw] on the calling fiber's loop). When
    [sw] finishes: see {!Braid_db.S.val-pool}. With [sw], from a fiber of
    {!Braid_io.run}; without, from anywhere, and each loop's connections are
    held by that loop until it ends. Never blocks.

    Raises [Invalid_argument] if [max_size < 1], a duration is negative or NaN,
    or the caller is no fiber of {!Braid_io.run}. *)

val use : 'c t -> ('c -> ('a, Error.t) result) -> ('a, Error.t) result
(** [use pool f] lends a connection of the calling fiber's loop to [f] and takes
    it back: see {!Braid_db.S.use}. *)

val stats : 'c t -> stats
(** The sums over the loops' shares: see {!Braid_db.S.stats}. *)
