type what =
  | Fiber_created of { child : int; parent : int }
  | Fiber_running of int
  | Fiber_suspended of { fiber : int; on : Probe.waiting_on; detail : int }
  | Fiber_cancelled of int
  | Fiber_finished of int
  | Switch_opened of { switch : int; fiber : int }
  | Switch_closed of int
  | Pool_submitted of { task : int; submitter : int }
  | Pool_stolen of { thief : int; victim : int }
  | Pool_running of int
  | Loop_waiting of { timeout_ms : int }
  | Loop_woken of { events : int }
  | Http_began of {
      fiber : int;
      meth : string;
      path : string;
      request_id : string;
    }
  | Http_ended of { fiber : int; status : int; bytes : int }
  | Gc_began of string
  | Gc_ended of string
  | Lost of int

type t = { time_ns : int; domain : int; what : what }

(* An event's values as the wide form carries them (the recorder puts an int
   event's in the same places): the event's own value in [a], the operand of
   a two-value one in [b]; a response's fiber, status and bytes in [a], [b],
   [c]. [None] for what is not an event by itself: a wait, which the recorder
   joins to the suspension after it, and an operand. A suspension is
   returned waiting on a structure; the recorder fills in its wait. *)
let of_values (kind : Probe.kind) ~a ~b ~c ~strings:(s1, s2, s3) =
  match kind with
  | Fiber_create -> Some (Fiber_created { child = a; parent = b })
  | Fiber_run -> Some (Fiber_running a)
  | Fiber_suspend ->
      Some (Fiber_suspended { fiber = a; on = Structure; detail = 0 })
  | Fiber_cancel -> Some (Fiber_cancelled a)
  | Fiber_finish -> Some (Fiber_finished a)
  | Switch_open -> Some (Switch_opened { switch = a; fiber = b })
  | Switch_close -> Some (Switch_closed a)
  | Pool_submit -> Some (Pool_submitted { task = a; submitter = b })
  | Pool_steal -> Some (Pool_stolen { thief = a; victim = b })
  | Pool_run -> Some (Pool_running a)
  | Loop_wait -> Some (Loop_waiting { timeout_ms = a })
  | Loop_woken -> Some (Loop_woken { events = a })
  | Http_begin ->
      Some (Http_began { fiber = a; meth = s1; path = s2; request_id = s3 })
  | Http_end -> Some (Http_ended { fiber = a; status = b; bytes = c })
  | Fiber_wait_descriptor | Fiber_wait_timer | Fiber_wait_join | Operand -> None
