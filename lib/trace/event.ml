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

let of_payload (kind : Probe.kind) (p : Payload.t) =
  match kind with
  | Fiber_create -> Fiber_created { child = p.a; parent = p.b }
  | Fiber_run -> Fiber_running p.a
  | Fiber_suspend ->
      Fiber_suspended
        { fiber = p.a; on = Probe.waiting_on_of_code p.b; detail = p.c }
  | Fiber_cancel -> Fiber_cancelled p.a
  | Fiber_finish -> Fiber_finished p.a
  | Switch_open -> Switch_opened { switch = p.a; fiber = p.b }
  | Switch_close -> Switch_closed p.a
  | Pool_submit -> Pool_submitted { task = p.a; submitter = p.b }
  | Pool_steal -> Pool_stolen { thief = p.a; victim = p.b }
  | Pool_run -> Pool_running p.a
  | Loop_wait -> Loop_waiting { timeout_ms = p.a }
  | Loop_woken -> Loop_woken { events = p.a }
  | Http_begin ->
      Http_began { fiber = p.a; meth = p.s1; path = p.s2; request_id = p.s3 }
  | Http_end -> Http_ended { fiber = p.a; status = p.b; bytes = p.c }
