(** Each domain's buffer of trace records, written by {!Probe} and handed to
    OCaml's Runtime_events ring as one custom event ("braid.records") at a time.
    Private to braid_trace.

    Every function acts on the calling domain's own buffer: any domain may call
    them, none blocks (a flush writes to the ring, which never waits), and none
    may be called from a signal handler. The writes are [noalloc] C calls; they
    are declared [external] here so that callers make the direct call, not one
    through an OCaml wrapper. *)

(** {1 Writing records}

    A write answers 1 when the record was written, 0 when the calling domain has
    no buffer yet or lacks room for the record; the caller then calls
    {!make_room} and writes once more. Each record is stamped with the monotonic
    clock when written. *)

external attach : unit -> (int[@untagged])
  = "braid_trace_attach_byte" "braid_trace_attach"
[@@noalloc]
(** Gives the calling domain its buffer: 1 if it had none, 0 otherwise. *)

external put1 : (int[@untagged]) -> (int[@untagged]) -> (int[@untagged])
  = "braid_trace_put1_byte" "braid_trace_put1"
[@@noalloc]
(** [put1 kind a]: a record of [kind] with one operand. *)

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
(** [put_suspend fiber]: [fiber] suspends, on the wait {!set_wait} last set (a
    structure unless set). *)

external set_wait : (int[@untagged]) -> (int[@untagged]) -> (int[@untagged])
  = "braid_trace_set_wait_byte" "braid_trace_set_wait"
[@@noalloc]
(** [set_wait kind detail]: what the next suspension waits on. *)

external mark_sleep : (int[@untagged]) -> (int[@untagged])
  = "braid_trace_sleep_byte" "braid_trace_sleep"
[@@noalloc]
(** The IO loop goes to sleep; its wake-up ({!put_woken}) completes the record.
*)

external put_woken : (int[@untagged]) -> (int[@untagged])
  = "braid_trace_woken_byte" "braid_trace_woken"
[@@noalloc]
(** [put_woken events]: the loop woke with [events] ready. *)

external put_strings :
  (int[@untagged]) ->
  (int[@untagged]) ->
  string ->
  string ->
  string ->
  (int[@untagged]) = "braid_trace_put_strings_byte" "braid_trace_put_strings"
[@@noalloc]
(** [put_strings kind a s1 s2 s3]: a record with an operand and three strings
    (an HTTP request's method, path and id). *)

external fill : unit -> (int[@untagged])
  = "braid_trace_fill_byte" "braid_trace_fill"
[@@noalloc]
(** The bytes the calling domain's buffer holds. *)

(** {1 Record kinds}

    In step with buffer_stubs.c; the recorder decodes them. *)

val fiber_create : int
val fiber_run : int

val suspend : int
(** Plus the wait: structure 0, descriptor 1, timer 2, join 3. *)

val fiber_cancel : int
val fiber_finish : int
val switch_open : int
val switch_close : int
val pool_submit : int
val pool_steal : int
val pool_run : int
val loop_sleep : int
val http_begin : int
val http_end : int

val capacity : int
(** The most bytes of records one custom event carries (1016). *)

type Runtime_events.User.tag += Records  (** The tag of {!event}. *)

val ty : Bytes.t Runtime_events.Type.t
(** The records' event type: encoding moves the calling domain's records into
    the ring's bytes (the value written is ignored), decoding copies them out in
    the consumer. *)

val event : Bytes.t Runtime_events.User.t
(** The custom event ["braid.records"] the buffers are written as. *)

(** {1 Flushing} *)

val flush : unit -> unit
(** Writes the calling domain's records to the ring as one event and empties the
    buffer. While Runtime_events is paused the records are dropped, as the
    runtime drops its own. *)

val make_room : unit -> unit
(** After a write answered 0: gives the domain its buffer (and flushes it when
    the domain exits), or flushes the full one. *)
