let idle () = ()

type t = {
  mutable slots : (unit -> unit) array;  (** Length is a power of two. *)
  mutable first : int;
  mutable length : int;
}

let create () = { slots = Array.make 256 idle; first = 0; length = 0 }
let is_empty q = q.length = 0
let length q = q.length

let grow q =
  let old = q.slots in
  let capacity = Array.length old in
  q.slots <-
    Array.init (2 * capacity) (fun i ->
        if i < capacity then old.((q.first + i) land (capacity - 1)) else idle);
  q.first <- 0

let push q task =
  if q.length = Array.length q.slots then grow q;
  let mask = Array.length q.slots - 1 in
  Array.unsafe_set q.slots ((q.first + q.length) land mask) task;
  q.length <- q.length + 1

let pop q =
  if q.length = 0 then invalid_arg "Task_queue.pop: empty";
  let i = q.first in
  let task = Array.unsafe_get q.slots i in
  Array.unsafe_set q.slots i idle;
  q.first <- (i + 1) land (Array.length q.slots - 1);
  q.length <- q.length - 1;
  task
