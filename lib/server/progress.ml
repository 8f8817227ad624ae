type phase = Idle | Head | Body | Upgraded
type idle_wait = Not_waiting | Awaiting | Reading

type t = {
  draining : bool Atomic.t;
  mutable phase : phase;
  mutable first : bool;
  mutable head_deadline : int;
  mutable idle_deadline : int;
  mutable idle_since : int;
  mutable writes : int;
  mutable send_timeout : int;
  mutable keep_alive : int;
      (** The keep-alive timeout in nanoseconds: worked out once, not per
          request. *)
  mutable idle_wait : idle_wait;
  mutable idle_rounds : int;
  mutable release : unit -> unit;
  mutable parked : bool;
  mutable seen_writes : int;
  mutable seen_at : int;
}

let drain_grace = 1.

let create draining =
  {
    draining;
    phase = Body;
    first = true;
    head_deadline = 0;
    idle_deadline = max_int;
    idle_since = 0;
    writes = 0;
    send_timeout = max_int;
    keep_alive = 0;
    idle_wait = Not_waiting;
    idle_rounds = 0;
    release = ignore;
    parked = false;
    seen_writes = 0;
    seen_at = 0;
  }

let ns_of_seconds s =
  if Float.is_nan s then 0
  else int_of_float (Float.max 0. (Float.min (s *. 1e9) 1e18))

let is_idle c = c.phase = Idle
let idle_deadline c = c.idle_deadline

let send_stalled c ~now =
  if c.writes land 1 = 0 then false
  else if c.writes <> c.seen_writes then (
    c.seen_writes <- c.writes;
    c.seen_at <- now;
    false)
  else now - c.seen_at >= c.send_timeout

let start c (timeouts : Config.timeouts) ~now =
  c.idle_since <- now;
  c.head_deadline <- now + ns_of_seconds timeouts.request_header;
  c.idle_deadline <- c.head_deadline;
  c.send_timeout <- ns_of_seconds timeouts.send;
  c.keep_alive <- ns_of_seconds timeouts.keep_alive
