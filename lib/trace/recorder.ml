type t = {
  cursor : Runtime_events.cursor;
  callbacks : Runtime_events.Callbacks.t;
  newest_first : Event.t list ref;  (** What the callbacks added. *)
  mutable closed : bool;
}

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
  and lost_events domain n = add domain 0 (Lost n)
  and user domain ts event payload =
    match Runtime_events.User.tag event with
    | Probe.Braid kind ->
        add domain (timestamp ts) (Event.of_payload kind payload)
    | _ -> ()
  in
  let callbacks =
    Runtime_events.Callbacks.create ~runtime_begin ~runtime_end ~lost_events ()
    |> Runtime_events.Callbacks.add_user_event Payload.ty user
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
