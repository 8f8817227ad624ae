(* A ring of entries addressed by their absolute number, the count of
   insertions before them: entry [i] (1 the newest) is number
   [inserted - i], held in slot [number land (capacity - 1)]. Neither
   insertion nor eviction moves an entry, and a number stays valid when the
   ring grows.

   An indexed table (the encoder's) also chains its entries by the hash of
   the whole field and by the hash of the name, each chain newest first,
   holding numbers. Eviction leaves the chains alone: a walk stops at the
   first number older than the oldest entry, since everything after it is
   older still. So a look-up costs two hashes and a short walk, not a scan
   of the table, and nothing needs to be kept in step on eviction. *)

type index = {
  mutable by_field : int array;  (** Bucket heads: numbers, or -1. *)
  mutable by_name : int array;
  mutable next_field : int array;  (** By slot: the next older number. *)
  mutable next_name : int array;
}

type t = {
  mutable names : string array;
  mutable values : string array;
  mutable checked : Bytes.t;  (** By slot: the decoder's mark (see {!add}). *)
  mutable inserted : int;
  mutable length : int;
  mutable size : int;
  mutable max_size : int;
  index : index option;
}

(* Room for 8 entries at first, doubled as needed: an idle connection
   holds two tables. *)
let initial_capacity = 8

let create ?(indexed = false) ~max_size () =
  let cap = initial_capacity in
  {
    names = Array.make cap "";
    values = Array.make cap "";
    checked = Bytes.make cap '\000';
    inserted = 0;
    length = 0;
    size = 0;
    max_size;
    index =
      (if indexed then
         Some
           {
             by_field = Array.make (2 * cap) (-1);
             by_name = Array.make (2 * cap) (-1);
             next_field = Array.make cap (-1);
             next_name = Array.make cap (-1);
           }
       else None);
  }

let entry_size name value = 32 + String.length name + String.length value
let length t = t.length
let size t = t.size
let max_size t = t.max_size
let capacity t = Array.length t.names
let slot_of t number = number land (capacity t - 1)
let slot t i = slot_of t (t.inserted - i)
let name t i = Array.unsafe_get t.names (slot t i)
let value t i = Array.unsafe_get t.values (slot t i)
let checked t i = Bytes.unsafe_get t.checked (slot t i) <> '\000'
let oldest t = t.inserted - t.length

(* A hash of the length and of at most 24 bytes: the first eight, eight from
   the middle and the last eight, read eight at a time. Values that differ
   only elsewhere share a chain, which costs a comparison each: at worst, a
   table whose entries all collide, the scan this index replaced (the
   table's size bounds the chain). The bytes read tell apart what changes
   between responses: the seconds of a date, the end of an etag. *)
external get64u : string -> int -> int64 = "%caml_string_get64u"

let mix h x =
  let h = h lxor x * 0x100_0000_01b3 in
  h lxor (h lsr 29)

let hash_string s =
  let n = String.length s in
  if n >= 8 then
    let h = mix n (Int64.to_int (get64u s 0)) in
    let h =
      if n > 16 then mix h (Int64.to_int (get64u s ((n / 2) - 4))) else h
    in
    mix h (Int64.to_int (get64u s (n - 8)))
  else
    let h = ref n in
    for i = 0 to n - 1 do
      h := (!h * 31) + Char.code (String.unsafe_get s i)
    done;
    mix !h 0

let hash_name name = hash_string name

(* The name enters the field's hash by its length alone: a value seldom
   goes with two names of one length, and a look-up of a whole field then
   hashes one string. *)
let hash_field name value = mix (String.length name) (hash_string value)

let evict_oldest t =
  let s = slot_of t (oldest t) in
  t.size <- t.size - entry_size t.names.(s) t.values.(s);
  (* Let the strings go now rather than when the slot is reused. *)
  t.names.(s) <- "";
  t.values.(s) <- "";
  t.length <- t.length - 1

let evict_to t limit =
  while t.size > limit do
    evict_oldest t
  done

let link ix ~field_hash ~name_hash ~mask s number =
  let b = field_hash land mask in
  ix.next_field.(s) <- ix.by_field.(b);
  ix.by_field.(b) <- number;
  let b = name_hash land mask in
  ix.next_name.(s) <- ix.by_name.(b);
  ix.by_name.(b) <- number

(* Doubles the ring, each entry moving to its number's new slot, and
   rebuilds the chains (oldest first, so each stays newest first). The
   table's size bounds the number of entries (each is at least 32 bytes),
   so the ring never grows past [max_size / 32] slots. *)
let grow t =
  let cap = 2 * capacity t in
  let names = Array.make cap "" and values = Array.make cap "" in
  let checked = Bytes.make cap '\000' in
  for number = oldest t to t.inserted - 1 do
    let from = slot_of t number and s = number land (cap - 1) in
    names.(s) <- t.names.(from);
    values.(s) <- t.values.(from);
    Bytes.set checked s (Bytes.get t.checked from)
  done;
  t.names <- names;
  t.values <- values;
  t.checked <- checked;
  match t.index with
  | None -> ()
  | Some ix ->
      ix.by_field <- Array.make (2 * cap) (-1);
      ix.by_name <- Array.make (2 * cap) (-1);
      ix.next_field <- Array.make cap (-1);
      ix.next_name <- Array.make cap (-1);
      let mask = (2 * cap) - 1 in
      for number = oldest t to t.inserted - 1 do
        let s = number land (cap - 1) in
        link ix
          ~field_hash:(hash_field names.(s) values.(s))
          ~name_hash:(hash_name names.(s))
          ~mask s number
      done

let add ?(checked = false) t name value =
  let n = entry_size name value in
  if n > t.max_size then evict_to t 0
  else (
    evict_to t (t.max_size - n);
    if t.length = capacity t then grow t;
    let number = t.inserted in
    let s = slot_of t number in
    t.names.(s) <- name;
    t.values.(s) <- value;
    Bytes.unsafe_set t.checked s (if checked then '\001' else '\000');
    t.inserted <- number + 1;
    t.length <- t.length + 1;
    t.size <- t.size + n;
    match t.index with
    | None -> ()
    | Some ix ->
        link ix ~field_hash:(hash_field name value) ~name_hash:(hash_name name)
          ~mask:(Array.length ix.by_field - 1)
          s number)

let set_max_size t n =
  t.max_size <- n;
  evict_to t n

let find ?(by_name = true) t name value =
  match t.index with
  | None -> invalid_arg "Dynamic_table.find: not indexed"
  | Some ix -> (
      if t.length = 0 then 0
      else
        let oldest = oldest t and mask = Array.length ix.by_field - 1 in
        let rec whole number =
          if number < oldest then 0
          else
            let s = slot_of t number in
            if
              String.equal (Array.unsafe_get t.values s) value
              && String.equal (Array.unsafe_get t.names s) name
            then t.inserted - number
            else whole (Array.unsafe_get ix.next_field s)
        in
        let rec named number =
          if number < oldest then 0
          else
            let s = slot_of t number in
            if String.equal (Array.unsafe_get t.names s) name then
              number - t.inserted
            else named (Array.unsafe_get ix.next_name s)
        in
        match
          whole (Array.unsafe_get ix.by_field (hash_field name value land mask))
        with
        | 0 when by_name ->
            named (Array.unsafe_get ix.by_name (hash_name name land mask))
        | i -> i)
