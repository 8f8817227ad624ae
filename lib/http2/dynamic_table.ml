(* A ring of entries: the newest at [newest], the older ones after it
   (modulo the capacity). Inserting moves [newest] one back, so neither
   insertion nor eviction moves an entry. *)
type t = {
  mutable names : string array;
  mutable values : string array;
  mutable newest : int;
  mutable length : int;
  mutable size : int;
  mutable max_size : int;
}

let create ~max_size =
  {
    names = Array.make 16 "";
    values = Array.make 16 "";
    newest = 0;
    length = 0;
    size = 0;
    max_size;
  }

let entry_size name value = 32 + String.length name + String.length value
let length t = t.length
let size t = t.size
let max_size t = t.max_size
let capacity t = Array.length t.names
let slot t i = (t.newest + i - 1) mod capacity t
let name t i = Array.unsafe_get t.names (slot t i)
let value t i = Array.unsafe_get t.values (slot t i)

let evict_oldest t =
  let s = slot t t.length in
  t.size <- t.size - entry_size t.names.(s) t.values.(s);
  (* Let the strings go now rather than when the slot is reused. *)
  t.names.(s) <- "";
  t.values.(s) <- "";
  t.length <- t.length - 1

let evict_to t limit =
  while t.size > limit do
    evict_oldest t
  done

(* Doubles the ring, copying the entries in order (newest at 0). The table's
   size bounds the number of entries (each is at least 32 bytes), so the
   ring never grows past [max_size / 32] slots. *)
let grow t =
  let cap = capacity t in
  let names = Array.make (2 * cap) "" and values = Array.make (2 * cap) "" in
  for i = 1 to t.length do
    names.(i - 1) <- name t i;
    values.(i - 1) <- value t i
  done;
  t.names <- names;
  t.values <- values;
  t.newest <- 0

let add t name value =
  let n = entry_size name value in
  if n > t.max_size then evict_to t 0
  else (
    evict_to t (t.max_size - n);
    if t.length = capacity t then grow t;
    let cap = capacity t in
    t.newest <- (t.newest + cap - 1) mod cap;
    t.names.(t.newest) <- name;
    t.values.(t.newest) <- value;
    t.length <- t.length + 1;
    t.size <- t.size + n)

let set_max_size t n =
  t.max_size <- n;
  evict_to t n
