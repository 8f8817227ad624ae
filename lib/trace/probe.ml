type kind =
  | Fiber_create
  | Fiber_run
  | Fiber_suspend
  | Fiber_wait_descriptor
  | Fiber_wait_timer
  | Fiber_wait_join
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
  | Operand

type Runtime_events.User.tag += Braid of kind

let name = function
  | Fiber_create -> "braid.fiber.create"
  | Fiber_run -> "braid.fiber.run"
  | Fiber_suspend -> "braid.fiber.suspend"
  | Fiber_wait_descriptor -> "braid.fiber.wait.descriptor"
  | Fiber_wait_timer -> "braid.fiber.wait.timer"
  | Fiber_wait_join -> "braid.fiber.wait.join"
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
  | Operand -> "braid.operand"

(* Most events are of the runtime's own integer type, which it writes
   without calling back into OCaml, but which keeps 32 bits ([Packed]). An
   event of two values is two int events on the same domain, an [Operand]
   then the event, which the recorder joins: nothing can come between them,
   as neither write allocates nor polls, so no other systhread of the domain
   runs in between. An event whose values do not fit is written instead as
   its wide twin, ["<name>.wide"], of the custom type (three integers);
   [http.begin], which carries strings, only has that form. *)
let register_int kind =
  Runtime_events.User.register (name kind) (Braid kind) Runtime_events.Type.int

let register_wide kind =
  Runtime_events.User.register (name kind ^ ".wide") (Braid kind) Payload.ty

(* Registered at initialisation, in this order, by every program that links
   the library: the emitting program and the consumer both, which is how the
   consumer knows them by name. *)
type form = {
  int : int Runtime_events.User.t;
  wide : Payload.t Runtime_events.User.t;
}

let both kind = { int = register_int kind; wide = register_wide kind }
let operand = register_int Operand
let fiber_create = both Fiber_create
let fiber_run = both Fiber_run
let fiber_suspend = both Fiber_suspend
let fiber_wait_descriptor = both Fiber_wait_descriptor
let fiber_wait_timer = both Fiber_wait_timer
let fiber_wait_join = both Fiber_wait_join
let fiber_cancel = both Fiber_cancel
let fiber_finish = both Fiber_finish
let switch_open = both Switch_open
let switch_close = both Switch_close
let pool_submit = both Pool_submit
let pool_steal = both Pool_steal
let pool_run = both Pool_run
let loop_wait = both Loop_wait
let loop_woken = both Loop_woken

let http_begin =
  Runtime_events.User.register (name Http_begin) (Braid Http_begin) Payload.ty

let http_end = both Http_end

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

(* The slow paths, out of line so that each probe inlined at its call site
   is a load, a branch and a call that is not taken. *)
let[@inline never] write_wide event a b c =
  let p = Payload.scratch () in
  p.a <- a;
  p.b <- b;
  p.c <- c;
  (* The last http.begin's strings: not this event's. *)
  p.s1 <- "";
  p.s2 <- "";
  p.s3 <- "";
  Runtime_events.User.write event p

let[@inline never] write form n =
  if Packed.fits n then Runtime_events.User.write form.int n
  else write_wide form.wide n 0 0

(* The wide form carries [main] first, as Event reads it. *)
let[@inline never] write_pair form ~main ~operand:first =
  if Packed.fits first && Packed.fits main then (
    Runtime_events.User.write operand first;
    Runtime_events.User.write form.int main)
  else write_wide form.wide main first 0

let[@inline never] write_strings event a s1 s2 s3 =
  let p = Payload.scratch () in
  p.a <- a;
  p.b <- 0;
  p.c <- 0;
  p.s1 <- s1;
  p.s2 <- s2;
  p.s3 <- s3;
  (* The strings stay until the next write replaces them (keeping one
     request's path reachable per domain): clearing them would cost three
     more write barriers per request. *)
  Runtime_events.User.write event p

let[@inline never] write_response ~fiber ~status ~bytes =
  if Packed.fits fiber && Packed.fits_response ~status ~bytes then (
    Runtime_events.User.write operand fiber;
    Runtime_events.User.write http_end.int (Packed.response ~status ~bytes))
  else write_wide http_end.wide fiber status bytes

let[@inline] fiber_created ~child ~parent =
  if flag.on then write_pair fiber_create ~main:child ~operand:parent

let[@inline] fiber_running fiber = if flag.on then write fiber_run fiber
let[@inline] fiber_suspended fiber = if flag.on then write fiber_suspend fiber
let[@inline] fiber_cancelled fiber = if flag.on then write fiber_cancel fiber
let[@inline] fiber_finished fiber = if flag.on then write fiber_finish fiber

external descriptor_number : Unix.file_descr -> int
  = "braid_trace_descriptor_number"
[@@noalloc]

(* What a suspension waits on is its own event, written by the code that
   knows (the loop: a descriptor, a timer) just before it suspends, on the
   same domain: the recorder gives it to that domain's next suspension. *)
let[@inline] waiting_on_descriptor fd =
  if flag.on then write fiber_wait_descriptor (descriptor_number fd)

let[@inline] waiting_on_timer ~deadline_ns =
  if flag.on then write fiber_wait_timer deadline_ns

let[@inline] waiting_on_join fiber = if flag.on then write fiber_wait_join fiber
let switch_ids = Atomic.make 1
let[@inline never] next_switch_id () = Atomic.fetch_and_add switch_ids 1
let[@inline] switch_id () = if flag.on then next_switch_id () else 0

let[@inline] switch_opened ~switch ~fiber =
  if flag.on then write_pair switch_open ~main:switch ~operand:fiber

let[@inline] switch_closed ~switch = if flag.on then write switch_close switch

let[@inline] pool_submitted ~task ~submitter =
  if flag.on then write_pair pool_submit ~main:task ~operand:submitter

let[@inline] pool_stolen ~thief ~victim =
  if flag.on then write_pair pool_steal ~main:thief ~operand:victim

let[@inline] pool_running ~task = if flag.on then write pool_run task

let[@inline] loop_waiting ~timeout_ms =
  if flag.on then write loop_wait timeout_ms

let[@inline] loop_woken_by ~events = if flag.on then write loop_woken events

let[@inline] http_began ~fiber ~meth ~path ~request_id =
  if flag.on then write_strings http_begin fiber meth path request_id

let[@inline] http_ended ~fiber ~status ~bytes =
  if flag.on then write_response ~fiber ~status ~bytes
