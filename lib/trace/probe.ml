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

(* Inlined at each call site: when off, a load and a branch not taken;
   when on, one noalloc call (no OCaml call between the probe and the C
   write: the wrappers that made one cost 30 instructions a record). A
   record that finds no room (or no buffer: the domain's first) makes room,
   out of line, and is written again, into an empty buffer, where it
   fits. *)
let[@inline never] again1 kind a =
  Batch.make_room ();
  ignore (Batch.put1 kind a : int)

let[@inline never] again2 kind a b =
  Batch.make_room ();
  ignore (Batch.put2 kind a b : int)

let[@inline never] again3 kind a b c =
  Batch.make_room ();
  ignore (Batch.put3 kind a b c : int)

let[@inline never] again_suspend fiber =
  Batch.make_room ();
  ignore (Batch.put_suspend fiber : int)

let[@inline never] again_woken events =
  Batch.make_room ();
  ignore (Batch.put_woken events : int)

let[@inline never] again_strings kind a s1 s2 s3 =
  Batch.make_room ();
  ignore (Batch.put_strings kind a s1 s2 s3 : int)

(* No closure in these: the compiler (without flambda) inlines no function
   that makes one. *)
let[@inline] record1 kind a = if Batch.put1 kind a = 0 then again1 kind a
let[@inline] record2 kind a b = if Batch.put2 kind a b = 0 then again2 kind a b

let[@inline] record3 kind a b c =
  if Batch.put3 kind a b c = 0 then again3 kind a b c

let[@inline] record_suspend fiber =
  if Batch.put_suspend fiber = 0 then again_suspend fiber

let[@inline] record_woken events =
  if Batch.put_woken events = 0 then again_woken events

let[@inline] record_strings kind a s1 s2 s3 =
  if Batch.put_strings kind a s1 s2 s3 = 0 then again_strings kind a s1 s2 s3

let[@inline never] again_wait kind detail =
  Batch.make_room ();
  ignore (Batch.set_wait kind detail : int)

let[@inline] wait kind detail =
  if Batch.set_wait kind detail = 0 then again_wait kind detail

let[@inline never] sleep timeout_ms =
  Batch.flush ();
  if Batch.mark_sleep timeout_ms = 0 then (
    Batch.make_room ();
    ignore (Batch.mark_sleep timeout_ms : int))

let[@inline never] flush_mine () = Batch.flush ()
let[@inline] flush () = if flag.on then flush_mine ()

let[@inline] fiber_created ~child ~parent =
  if flag.on then record2 Batch.fiber_create child parent

let[@inline] fiber_running fiber = if flag.on then record1 Batch.fiber_run fiber
let[@inline] fiber_suspended fiber = if flag.on then record_suspend fiber

let[@inline] fiber_cancelled fiber =
  if flag.on then record1 Batch.fiber_cancel fiber

let[@inline] fiber_finished fiber =
  if flag.on then record1 Batch.fiber_finish fiber

external descriptor_number : Unix.file_descr -> int
  = "braid_trace_descriptor_number"
[@@noalloc]

(* What a suspension waits on is noted by the code that knows (the loop: a
   descriptor, a timer), just before it suspends, on the same domain; the
   suspension's record carries it. No record, no clock: two stores. *)
let[@inline] waiting_on_descriptor fd =
  if flag.on then wait 1 (descriptor_number fd)

let[@inline] waiting_on_timer ~deadline_ns = if flag.on then wait 2 deadline_ns
let[@inline] waiting_on_join fiber = if flag.on then wait 3 fiber
let switch_ids = Atomic.make 1
let[@inline never] next_switch_id () = Atomic.fetch_and_add switch_ids 1
let[@inline] switch_id () = if flag.on then next_switch_id () else 0

let[@inline] switch_opened ~switch ~fiber =
  if flag.on then record2 Batch.switch_open switch fiber

let[@inline] switch_closed ~switch =
  if flag.on then record1 Batch.switch_close switch

let[@inline] pool_submitted ~task ~submitter =
  if flag.on then record2 Batch.pool_submit task submitter

let[@inline] pool_stolen ~thief ~victim =
  if flag.on then record2 Batch.pool_steal thief victim

let[@inline] pool_running ~task = if flag.on then record1 Batch.pool_run task

(* The loop's sleep is one record, written when it wakes (with when it
   started); going to sleep is when the buffer goes to the ring, so that a
   consumer sees what the loop did before it slept. *)
let[@inline] loop_waiting ~timeout_ms = if flag.on then sleep timeout_ms
let[@inline] loop_woken_by ~events = if flag.on then record_woken events

let[@inline] http_began ~fiber ~meth ~path ~request_id =
  if flag.on then record_strings Batch.http_begin fiber meth path request_id

let[@inline] http_ended ~fiber ~status ~bytes =
  if flag.on then record3 Batch.http_end fiber status bytes
