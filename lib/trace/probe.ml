type kind =
  | Fiber_create
  | Fiber_run
  | Fiber_suspend
  | Fiber_cancel
  | Fiber_finish
  | Switch_open
  | Switch_close
  | Pool_submit
  | Pool_steal
  | Pool_run
  | Loop_wait
  | Loop_woken
  | Http_begin
  | Http_end

type Runtime_events.User.tag += Braid of kind

let name = function
  | Fiber_create -> "braid.fiber.create"
  | Fiber_run -> "braid.fiber.run"
  | Fiber_suspend -> "braid.fiber.suspend"
  | Fiber_cancel -> "braid.fiber.cancel"
  | Fiber_finish -> "braid.fiber.finish"
  | Switch_open -> "braid.switch.open"
  | Switch_close -> "braid.switch.close"
  | Pool_submit -> "braid.pool.submit"
  | Pool_steal -> "braid.pool.steal"
  | Pool_run -> "braid.pool.run"
  | Loop_wait -> "braid.loop.wait"
  | Loop_woken -> "braid.loop.woken"
  | Http_begin -> "braid.http.begin"
  | Http_end -> "braid.http.end"

let register kind =
  Runtime_events.User.register (name kind) (Braid kind) Payload.ty

(* Registered at initialisation, in this order, by every program that links
   the library: the emitting program and the consumer both, which is how the
   consumer knows them by name. *)
let fiber_create = register Fiber_create
let fiber_run = register Fiber_run
let fiber_suspend = register Fiber_suspend
let fiber_cancel = register Fiber_cancel
let fiber_finish = register Fiber_finish
let switch_open = register Switch_open
let switch_close = register Switch_close
let pool_submit = register Pool_submit
let pool_steal = register Pool_steal
let pool_run = register Pool_run
let loop_wait = register Loop_wait
let loop_woken = register Loop_woken
let http_begin = register Http_begin
let http_end = register Http_end

(* Process-wide, as the ring it guards is: a value passed around could not
   reach the probes of every scheduler without widening every interface. It
   is written before events are wanted (at start-up, or by [enable]) and
   only read afterwards; a domain that reads it late misses a few events,
   nothing worse. A mutable field of a static record: one load. *)
type flag = { mutable on : bool }

let flag = { on = false }
let[@inline] enabled () = flag.on

let enable () =
  Runtime_events.start ();
  flag.on <- true

let disable () = flag.on <- false

type waiting_on = Structure | Descriptor | Timer | Join

let waiting_on_code = function
  | Structure -> 0
  | Descriptor -> 1
  | Timer -> 2
  | Join -> 3

let waiting_on_of_code = function
  | 1 -> Descriptor
  | 2 -> Timer
  | 3 -> Join
  | _ -> Structure

(* What the next suspension on this domain waits on: set just before a
   suspend by the code that knows (the loop: a descriptor, a timer), read
   and reset by the scheduler's handler that runs next on the same thread. *)
type pending = { mutable what : int; mutable detail : int }

let pending_key = Domain.DLS.new_key (fun () -> { what = 0; detail = 0 })

(* The slow paths, out of line so that each probe inlined at its call site
   is a load, a branch and a call that is not taken. *)
let[@inline never] write event a b c =
  let p = Payload.scratch () in
  p.a <- a;
  p.b <- b;
  p.c <- c;
  Runtime_events.User.write event p

let[@inline never] write_strings event a b c s1 s2 s3 =
  let p = Payload.scratch () in
  p.a <- a;
  p.b <- b;
  p.c <- c;
  p.s1 <- s1;
  p.s2 <- s2;
  p.s3 <- s3;
  Runtime_events.User.write event p;
  p.s1 <- "";
  p.s2 <- "";
  p.s3 <- ""

let[@inline never] set_pending what detail =
  let p = Domain.DLS.get pending_key in
  p.what <- what;
  p.detail <- detail

let[@inline never] write_suspend fiber =
  let p = Domain.DLS.get pending_key in
  let what = p.what and detail = p.detail in
  p.what <- 0;
  p.detail <- 0;
  write fiber_suspend fiber what detail

let[@inline] fiber_created ~child ~parent =
  if flag.on then write fiber_create child parent 0

let[@inline] fiber_running fiber = if flag.on then write fiber_run fiber 0 0
let[@inline] fiber_suspended fiber = if flag.on then write_suspend fiber

let[@inline] fiber_cancelled fiber =
  if flag.on then write fiber_cancel fiber 0 0

let[@inline] fiber_finished fiber = if flag.on then write fiber_finish fiber 0 0

external descriptor_number : Unix.file_descr -> int
  = "braid_trace_descriptor_number"
[@@noalloc]

let[@inline] waiting_on_descriptor fd =
  if flag.on then
    set_pending (waiting_on_code Descriptor) (descriptor_number fd)

let[@inline] waiting_on_timer ~deadline_ns =
  if flag.on then set_pending (waiting_on_code Timer) deadline_ns

let[@inline] waiting_on_join fiber =
  if flag.on then set_pending (waiting_on_code Join) fiber

let switch_ids = Atomic.make 1
let[@inline never] next_switch_id () = Atomic.fetch_and_add switch_ids 1
let[@inline] switch_id () = if flag.on then next_switch_id () else 0

let[@inline] switch_opened ~switch ~fiber =
  if flag.on then write switch_open switch fiber 0

let[@inline] switch_closed ~switch =
  if flag.on then write switch_close switch 0 0

let[@inline] pool_submitted ~task ~submitter =
  if flag.on then write pool_submit task submitter 0

let[@inline] pool_stolen ~thief ~victim =
  if flag.on then write pool_steal thief victim 0

let[@inline] pool_running ~task = if flag.on then write pool_run task 0 0

let[@inline] loop_waiting ~timeout_ms =
  if flag.on then write loop_wait timeout_ms 0 0

let[@inline] loop_woken_by ~events = if flag.on then write loop_woken events 0 0

let[@inline] http_began ~fiber ~meth ~path ~request_id =
  if flag.on then write_strings http_begin fiber 0 0 meth path request_id

let[@inline] http_ended ~fiber ~status ~bytes =
  if flag.on then write http_end fiber status bytes
