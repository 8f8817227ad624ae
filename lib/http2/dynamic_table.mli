(** HPACK's dynamic table (RFC 7541 §2.3.2, §4): the most recently added field
    first, evicted oldest first to keep its size within a maximum. A field's
    size is 32 plus the lengths of its name and value (§4.1). Private to
    {!Hpack}: the encoder and the decoder each hold one. *)

type t

val create : ?indexed:bool -> max_size:int -> unit -> t
(** An empty table whose size may grow to [max_size] bytes. An [indexed] one
    (the encoder's) can be searched with {!find}. *)

val entry_size : string -> string -> int
(** [entry_size name value] is [32 + length name + length value]. *)

val length : t -> int
(** Number of entries. *)

val size : t -> int
(** Sum of the entries' sizes. *)

val max_size : t -> int

val name : t -> int -> string
(** [name t i] is the name of entry [i], from 1 (the newest) to [length t].
    Unchecked: the caller tests [i] against [length t]. *)

val value : t -> int -> string

val checked : t -> int -> bool
(** [checked t i]: entry [i] was added with [~checked:true]. *)

val add : ?checked:bool -> t -> string -> string -> unit
(** [add t name value] inserts the entry as the newest, evicting the oldest
    entries until it fits; an entry larger than [max_size t] empties the table
    and is not inserted (§4.4: not an error). [checked] (default [false]) is
    kept with the entry for its owner (the decoder marks the fields it found
    valid, so that an index to them needs no new check). *)

val set_max_size : t -> int -> unit
(** [set_max_size t n] sets the maximum, evicting the oldest entries until the
    size is at most [n]. *)

val find : ?by_name:bool -> t -> string -> string -> int
(** [find t name value] is the index of the newest entry holding the field, else
    minus the index of the newest holding the name (unless [by_name] is [false]:
    the caller has the name elsewhere), else 0. Costs a hash or two and a walk
    of the entries that share one, not a scan.

    Raises [Invalid_argument] if [t] is not indexed. *)
