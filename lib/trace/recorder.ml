type t = {
  cursor : Runtime_events.cursor;
  callbacks : Runtime_events.Callbacks.t;
  newest_first : Event.t list ref;  (** What the callbacks added. *)
  mutable closed : bool;
}

(* An event's values as the wide form carries them (the recorder puts an int
   event's in the same places): the event's own value in [a], the operand of
   a two-value one in [b]; a response's fiber, status and bytes in [a], [b],
   [c]. [None] for what is not an event by itself: a wait, which the recorder
   joins to the suspension after it, and an operand. A suspension is
   returned waiting on a structure; the recorder fills in its wait. *)
let event_of_values (kind : Probe.kind) ~a ~b ~c ~strings:(s1, s2, s3) :
    Event.what option =
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

let timestamp ts = Int64.to_int (Runtime_events.Timestamp.to_int64 ts)
let no_strings = ("", "", "")

(* What a ring's earlier events left for its next ones: the operand of the
   next two-value event, and what the next suspension waits on. Each is
   written just before the event it belongs to, on the same domain, so per
   ring is per domain. *)
type pending = {
  mutable operand : int;
  mutable wait : Probe.waiting_on;
  mutable detail : int;
}

let attach cursor =
  let newest_first = ref [] in
  let rings = Hashtbl.create 8 in
  let pending ring =
    match Hashtbl.find_opt rings ring with
    | Some p -> p
    | None ->
        let p = { operand = 0; wait = Structure; detail = 0 } in
        Hashtbl.replace rings ring p;
        p
  in
  let add domain time_ns what =
    newest_first := { Event.time_ns; domain; what } :: !newest_first
  in
  let runtime_begin domain ts phase =
    add domain (timestamp ts)
      (Gc_began (Runtime_events.runtime_phase_name phase))
  and runtime_end domain ts phase =
    add domain (timestamp ts)
      (Gc_ended (Runtime_events.runtime_phase_name phase))
  and lost_events domain n =
    (* What was pending may belong to an event that was lost. *)
    Hashtbl.remove rings domain;
    add domain 0 (Lost n)
  in
  let event domain ts (kind : Probe.kind) ~a ~b ~c ~strings =
    let p = pending domain in
    let wait on =
      p.wait <- on;
      p.detail <- a
    in
    match kind with
    | Operand -> ()
    | Fiber_wait_descriptor -> wait Descriptor
    | Fiber_wait_timer -> wait Timer
    | Fiber_wait_join -> wait Join
    | Fiber_suspend ->
        add domain (timestamp ts)
          (Fiber_suspended { fiber = a; on = p.wait; detail = p.detail });
        p.wait <- Structure;
        p.detail <- 0
    | kind ->
        Option.iter
          (add domain (timestamp ts))
          (event_of_values kind ~a ~b ~c ~strings)
  in
  (* An operand is for the very next int event, and only it. *)
  let take_operand domain =
    let p = pending domain in
    let operand = p.operand in
    p.operand <- 0;
    operand
  in
  let int_event domain ts ev n =
    match Runtime_events.User.tag ev with
    | Probe.Braid Operand -> (pending domain).operand <- n
    | Probe.Braid Http_end ->
        event domain ts Http_end ~a:(take_operand domain)
          ~b:(Packed.response_status n) ~c:(Packed.response_bytes n)
          ~strings:no_strings
    | Probe.Braid kind ->
        event domain ts kind ~a:n ~b:(take_operand domain) ~c:0
          ~strings:no_strings
    | _ -> ()
  and custom_event domain ts ev (p : Payload.t) =
    match Runtime_events.User.tag ev with
    | Probe.Braid kind ->
        event domain ts kind ~a:p.a ~b:p.b ~c:p.c ~strings:(p.s1, p.s2, p.s3)
    | _ -> ()
  in
  let callbacks =
    Runtime_events.Callbacks.create ~runtime_begin ~runtime_end ~lost_events ()
    |> Runtime_events.Callbacks.add_user_event Runtime_events.Type.int int_event
    |> Runtime_events.Callbacks.add_user_event Payload.ty custom_event
  in
  { cursor; callbacks; newest_first; closed = false }

let of_self () = attach (Runtime_events.create_cursor None)

let of_process ~dir ~pid =
  match Runtime_events.create_cursor (Some (dir, pid)) with
  | cursor -> Ok (attach cursor)
  | exception Failure msg -> Error msg

let poll t =
  if t.closed then 0 else Runtime_events.read_poll t.cursor t.callbacks None

let close t =
  if not t.closed then (
    t.closed <- true;
    Runtime_events.free_cursor t.cursor)

(* Each domain's ring is in order; the rings are read one after another, so
   the whole is sorted by time here (stable: events of one domain with the
   same timestamp keep their order). Lost-event notes (time 0) come first. *)
let events t =
  List.stable_sort
    (fun (a : Event.t) (b : Event.t) -> Int.compare a.time_ns b.time_ns)
    (List.rev !(t.newest_first))
