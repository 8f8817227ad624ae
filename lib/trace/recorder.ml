type t = {
  cursor : Runtime_events.cursor;
  callbacks : Runtime_events.Callbacks.t;
  newest_first : Event.t list ref;  (** What the callbacks added. *)
  mutable closed : bool;
}

(* A buffer's records (see buffer_stubs.c): a kind byte, the time since the
   previous record (the first one's is the clock itself), operands. A
   record cut short (which a writer never makes) ends the buffer's
   decoding, as does a kind not known. *)
exception Truncated

let decode records ~add =
  let len = Bytes.length records in
  let pos = ref 0 in
  let byte () =
    if !pos >= len then raise Truncated;
    let b = Bytes.get_uint8 records !pos in
    incr pos;
    b
  in
  let rec unsigned shift acc =
    let b = byte () in
    let acc = acc lor ((b land 0x7f) lsl shift) in
    if b land 0x80 = 0 then acc else unsigned (shift + 7) acc
  in
  let int () =
    let z = unsigned 0 0 in
    (z lsr 1) lxor -(z land 1)
  in
  let string () =
    let n = unsigned 0 0 in
    if !pos + n > len then raise Truncated;
    let s = Bytes.sub_string records !pos n in
    pos := !pos + n;
    s
  in
  let time = ref 0 in
  let suspended on ~detail =
    let fiber = int () in
    let detail = if detail then int () else 0 in
    Event.Fiber_suspended { fiber; on; detail }
  in
  try
    while !pos < len do
      let kind = byte () in
      time := !time + unsigned 0 0;
      let at = !time in
      let what : Event.what =
        match kind with
        | 0 ->
            let child = int () in
            Fiber_created { child; parent = int () }
        | 1 -> Fiber_running (int ())
        | 2 -> suspended Structure ~detail:false
        | 3 -> suspended Descriptor ~detail:true
        | 4 -> suspended Timer ~detail:true
        | 5 -> suspended Join ~detail:true
        | 6 -> Fiber_cancelled (int ())
        | 7 -> Fiber_finished (int ())
        | 8 ->
            let switch = int () in
            Switch_opened { switch; fiber = int () }
        | 9 -> Switch_closed (int ())
        | 10 ->
            let task = int () in
            Pool_submitted { task; submitter = int () }
        | 11 ->
            let thief = int () in
            Pool_stolen { thief; victim = int () }
        | 12 -> Pool_running (int ())
        | 13 ->
            (* One record for the whole sleep: its start is given back. *)
            let timeout_ms = int () in
            let slept = int () in
            let events = int () in
            add (at - slept) (Event.Loop_waiting { timeout_ms });
            Loop_woken { events }
        | 14 ->
            let fiber = int () in
            let meth = string () in
            let path = string () in
            Http_began { fiber; meth; path; request_id = string () }
        | 15 ->
            let fiber = int () in
            let status = int () in
            Http_ended { fiber; status; bytes = int () }
        | _ -> raise Truncated
      in
      add at what
    done
  with Truncated -> ()

let timestamp ts = Int64.to_int (Runtime_events.Timestamp.to_int64 ts)

let attach cursor =
  let newest_first = ref [] in
  let add domain time_ns what =
    newest_first := { Event.time_ns; domain; what } :: !newest_first
  in
  let runtime_begin domain ts phase =
    add domain (timestamp ts)
      (Gc_began (Runtime_events.runtime_phase_name phase))
  and runtime_end domain ts phase =
    add domain (timestamp ts)
      (Gc_ended (Runtime_events.runtime_phase_name phase))
  and lost_events domain n = add domain 0 (Lost n) in
  (* A ring is a domain's: its buffers are flushed by the domain itself. *)
  let records domain _ts ev buffer =
    match Runtime_events.User.tag ev with
    | Batch.Records -> decode buffer ~add:(add domain)
    | _ -> ()
  in
  let callbacks =
    Runtime_events.Callbacks.create ~runtime_begin ~runtime_end ~lost_events ()
    |> Runtime_events.Callbacks.add_user_event Batch.ty records
  in
  { cursor; callbacks; newest_first; closed = false }

let of_self () = attach (Runtime_events.create_cursor None)

let poll t =
  if t.closed then 0 else Runtime_events.read_poll t.cursor t.callbacks None

let close t =
  if not t.closed then (
    t.closed <- true;
    Runtime_events.free_cursor t.cursor)

(* The ring's file exists before the program has written its header, and a
   cursor copies the header once, when it is made: one made in between
   reads zeros and fails every poll with "corrupt stream" (seen in about
   half the runs of [braid trace] on a short program). A first poll tells,
   before any event is read: such a cursor is dropped, and the caller tries
   again. *)
let of_process ~dir ~pid =
  match Runtime_events.create_cursor (Some (dir, pid)) with
  | exception Failure msg -> Error msg
  | cursor -> (
      let t = attach cursor in
      match poll t with
      | (_ : int) -> Ok t
      | exception Failure msg ->
          close t;
          Error msg)

(* Each domain's ring is in order; the rings are read one after another, so
   the whole is sorted by time here (stable: events of one domain with the
   same timestamp keep their order). Lost-event notes (time 0) come first. *)
let events t =
  List.stable_sort
    (fun (a : Event.t) (b : Event.t) -> Int.compare a.time_ns b.time_ns)
    (List.rev !(t.newest_first))
