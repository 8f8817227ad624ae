let nothing () = ()

type t = {
  mutable tasks : (unit -> unit) array;  (** Length is a power of two. *)
  mutable head : int;  (** Index of the oldest task. *)
  mutable size : int;
}

let create () = { tasks = Array.make 64 nothing; head = 0; size = 0 }
let is_empty q = q.size = 0
let length q = q.size

let grow q =
  let old = q.tasks in
  let n = Array.length old in
  let tasks = Array.make (2 * n) nothing in
  for i = 0 to n - 1 do
    tasks.(i) <- old.((q.head + i) land (n - 1))
  done;
  q.tasks <- tasks;
  q.head <- 0

let push q task =
  if q.size = Array.length q.tasks then grow q;
  let mask = Array.length q.tasks - 1 in
  Array.unsafe_set q.tasks ((q.head + q.size) land mask) task;
  q.size <- q.size + 1

let pop q =
  if q.size = 0 then invalid_arg "Braid.Task_queue.pop: empty";
  let i = q.head in
  let task = Array.unsafe_get q.tasks i in
  Array.unsafe_set q.tasks i nothing;
  q.head <- (i + 1) land (Array.length q.tasks - 1);
  q.size <- q.size - 1;
  task
