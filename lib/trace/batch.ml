(* Each domain's probes write records into a buffer of their own (about a
   hundred instructions of C each, the clock read included), and the buffer
   goes to the runtime's ring as one custom event when it is full, when its
   domain is about to sleep (the IO loop's wait, a pool worker's park) and
   when the domain exits. One int event of the runtime cost 260 instructions
   under callgrind (a full C call that registers its roots, the clock, the
   ring's bookkeeping); a custom one 1,400 (the standard library's buffer
   pool, [Fun.protect], a callback into OCaml). A request wrote a custom
   event and three int events; now it writes about three records, and a
   share of a flush (scripts/trace-probe-cost.sh, docs/tracing.md). The
   buffers and the records' layout are in buffer_stubs.c. *)

(* The writes answer 1 when the record was written, 0 when the calling
   domain's buffer is missing or lacks room for it. *)

external attach : unit -> (int[@untagged])
  = "braid_trace_attach_byte" "braid_trace_attach"
[@@noalloc]

external put1 : (int[@untagged]) -> (int[@untagged]) -> (int[@untagged])
  = "braid_trace_put1_byte" "braid_trace_put1"
[@@noalloc]

external put2 :
  (int[@untagged]) -> (int[@untagged]) -> (int[@untagged]) -> (int[@untagged])
  = "braid_trace_put2_byte" "braid_trace_put2"
[@@noalloc]

external put3 :
  (int[@untagged]) ->
  (int[@untagged]) ->
  (int[@untagged]) ->
  (int[@untagged]) ->
  (int[@untagged]) = "braid_trace_put3_byte" "braid_trace_put3"
[@@noalloc]

external put_suspend : (int[@untagged]) -> (int[@untagged])
  = "braid_trace_suspend_byte" "braid_trace_suspend"
[@@noalloc]

external set_wait : (int[@untagged]) -> (int[@untagged]) -> (int[@untagged])
  = "braid_trace_set_wait_byte" "braid_trace_set_wait"
[@@noalloc]

external mark_sleep : (int[@untagged]) -> (int[@untagged])
  = "braid_trace_sleep_byte" "braid_trace_sleep"
[@@noalloc]

external put_woken : (int[@untagged]) -> (int[@untagged])
  = "braid_trace_woken_byte" "braid_trace_woken"
[@@noalloc]

external put_strings :
  (int[@untagged]) ->
  (int[@untagged]) ->
  string ->
  string ->
  string ->
  (int[@untagged]) = "braid_trace_put_strings_byte" "braid_trace_put_strings"
[@@noalloc]

external take : Bytes.t -> (int[@untagged])
  = "braid_trace_take_byte" "braid_trace_take"
[@@noalloc]

external fill : unit -> (int[@untagged])
  = "braid_trace_fill_byte" "braid_trace_fill"
[@@noalloc]

(* Record kinds, kept in step with buffer_stubs.c (suspend, loop_sleep). *)
let fiber_create = 0
let fiber_run = 1
let suspend = 2 (* + the wait: structure 0, descriptor 1, timer 2, join 3 *)
let fiber_cancel = 6
let fiber_finish = 7
let switch_open = 8
let switch_close = 9
let pool_submit = 10
let pool_steal = 11
let pool_run = 12
let loop_sleep = 13
let http_begin = 14
let http_end = 15

(* A custom event's value is at most the standard library's write buffer,
   1024 bytes, less the byte the runtime uses for the padding count. *)
let capacity = 1016

(* Runtime_events calls [encode] with its own bytes, on the flushing domain:
   [take] moves the records there (from the domain's buffer, not from the
   value written, which is only there for the type's sake) and empties the
   buffer, in one noalloc call. [decode] runs in the consumer. *)
let ty =
  Runtime_events.Type.register
    ~encode:(fun out (_ : Bytes.t) -> take out)
    ~decode:(fun out len -> Bytes.sub out 0 len)

type Runtime_events.User.tag += Records

let event = Runtime_events.User.register "braid.records" Records ty
let nothing = Bytes.empty

(* The standard library's [User.write] of a custom event takes a write
   buffer from a pool and gives it back under [Fun.protect]: 600 of the 1,600
   instructions a flush cost (measured with callgrind). The runtime's
   primitive under it takes the buffer as its first argument; OCaml 5.3's
   takes (write buffer, event, value), as its standard library calls it, and
   is called so here, with a buffer per domain, only on that version. *)
external user_write :
  Bytes.t -> Bytes.t Runtime_events.User.t -> Bytes.t -> unit
  = "caml_runtime_events_user_write"

let direct = String.starts_with ~prefix:"5.3." Sys.ocaml_version

(* 1024 bytes: the standard library's own write buffers' size, which the
   runtime's padding byte relies on (see [capacity]). *)
let write_buffer = Domain.DLS.new_key (fun () -> Bytes.create 1024)

let write () =
  if direct then user_write (Domain.DLS.get write_buffer) event nothing
  else Runtime_events.User.write event nothing

let flush () =
  if fill () > 0 then (
    write ();
    (* Runtime_events writes nothing while it is paused, and then did not
       empty the buffer: those records are dropped, as the runtime drops its
       own, rather than retried by every probe. *)
    if fill () > capacity / 2 then ignore (take nothing : int))

(* A write that failed: the domain's first (it has no buffer yet; what the
   buffer holds when the domain ends is flushed then, the main domain's
   before [at_exit]'s functions, so before BRAID_TRACE's recorder reads the
   ring last), or a full buffer. Either way, the write is tried once more. *)
let make_room () = if attach () = 1 then Domain.at_exit flush else flush ()
