(* A sleeping fiber's timer is one of these and nothing else: its action is
   the fiber's resumer itself, not a closure around it. *)
type timer = {
  deadline : int;
  mutable seq : int;
      (** Breaks ties: equal deadlines fire in insertion order. *)
  mutable index : int;  (** Position in the heap, [-1] once out of it. *)
  mutable action : unit Braid.resumer;
}

type t = {
  mutable heap : timer array;
  mutable size : int;
  mutable next_seq : int;
}

let never : unit Braid.resumer = fun _ -> false
let placeholder = { deadline = 0; seq = 0; index = -1; action = never }
let min_capacity = 16

let create () =
  { heap = Array.make min_capacity placeholder; size = 0; next_seq = 0 }

let length t = t.size
let next_deadline t = if t.size = 0 then max_int else t.heap.(0).deadline

let earlier a b =
  a.deadline < b.deadline || (a.deadline = b.deadline && a.seq < b.seq)

let place t i timer =
  t.heap.(i) <- timer;
  timer.index <- i

let rec sift_up t i timer =
  if i = 0 then place t 0 timer
  else
    let parent = (i - 1) / 2 in
    let p = t.heap.(parent) in
    if earlier timer p then (
      place t i p;
      sift_up t parent timer)
    else place t i timer

let rec sift_down t i timer =
  let left = (2 * i) + 1 in
  if left >= t.size then place t i timer
  else
    let right = left + 1 in
    let child =
      if right < t.size && earlier t.heap.(right) t.heap.(left) then right
      else left
    in
    let c = t.heap.(child) in
    if earlier c timer then (
      place t i c;
      sift_down t child timer)
    else place t i timer

let resize t capacity =
  let heap = Array.make capacity placeholder in
  Array.blit t.heap 0 heap 0 t.size;
  t.heap <- heap

let timer ~deadline = { deadline; seq = 0; index = -1; action = never }

let schedule t timer action =
  if timer.index >= 0 then invalid_arg "Timer_heap.schedule: already scheduled";
  timer.action <- action;
  timer.seq <- t.next_seq;
  t.next_seq <- t.next_seq + 1;
  if t.size = Array.length t.heap then resize t (2 * t.size);
  t.size <- t.size + 1;
  sift_up t (t.size - 1) timer

let add t ~deadline action =
  let timer = timer ~deadline in
  schedule t timer action;
  timer

(* Takes out the timer at [i], refilling the hole with the last one. *)
let remove_at t i =
  let removed = t.heap.(i) in
  removed.index <- -1;
  t.size <- t.size - 1;
  let last = t.heap.(t.size) in
  t.heap.(t.size) <- placeholder;
  if i < t.size then
    if i > 0 && earlier last t.heap.((i - 1) / 2) then sift_up t i last
    else sift_down t i last;
  let capacity = Array.length t.heap in
  if capacity > min_capacity && t.size < capacity / 4 then
    resize t (capacity / 2)

let remove t timer =
  let i = timer.index in
  if i >= 0 && i < t.size && t.heap.(i) == timer then remove_at t i

let fire_due t ~now =
  while t.size > 0 && t.heap.(0).deadline <= now do
    let timer = t.heap.(0) in
    remove_at t 0;
    ignore (timer.action (Ok ()) : bool)
  done
