type 'a resumer = ('a, exn) result -> bool
type _ Effect.t += Suspend : ('a resumer -> 'a option) -> 'a Effect.t

exception Cancelled

let () =
  Printexc.register_printer (function
    | Cancelled -> Some "Braid.Cancelled"
    | _ -> None)

(* Parking for callers no scheduler handles. (Stdlib's Mutex and Condition
   by their full names: the model checks in test/sync/dscheck compile this
   file next to Braid_sync's.) The mutex/condition pair is
   cached per domain and only created when the caller really goes to sleep;
   a second systhread parking on the same domain at once makes its own. *)
type sleeper = { mutex : Stdlib.Mutex.t; condition : Stdlib.Condition.t }
type 'a parking = Waiting | Sleeping of sleeper | Resumed of ('a, exn) result

let cached_sleeper : sleeper option Atomic.t Domain.DLS.key =
  Domain.DLS.new_key (fun () -> Atomic.make None)

let acquire_sleeper () =
  match Atomic.exchange (Domain.DLS.get cached_sleeper) None with
  | Some s -> s
  | None ->
      { mutex = Stdlib.Mutex.create (); condition = Stdlib.Condition.create () }

let release_sleeper s = Atomic.set (Domain.DLS.get cached_sleeper) (Some s)

(* Long enough to catch a handoff from a running domain, short enough not to
   starve a systhread of the same domain that is about to resume us. *)
let spin_pauses = 2_000

let rec resume_parked cell r =
  match Atomic.get cell with
  | Resumed _ -> false
  | Waiting as seen ->
      Atomic.compare_and_set cell seen (Resumed r) || resume_parked cell r
  | Sleeping s as seen ->
      if Atomic.compare_and_set cell seen (Resumed r) then (
        Stdlib.Mutex.lock s.mutex;
        Stdlib.Condition.signal s.condition;
        Stdlib.Mutex.unlock s.mutex;
        true)
      else resume_parked cell r

let unwrap = function Ok v -> v | Error e -> raise e

let is_resumed cell =
  match Atomic.get cell with Resumed _ -> true | Waiting | Sleeping _ -> false

let sleep cell =
  let s = acquire_sleeper () in
  if Atomic.compare_and_set cell Waiting (Sleeping s) then (
    Stdlib.Mutex.lock s.mutex;
    let rec wait () =
      match Atomic.get cell with
      | Resumed r -> r
      | Waiting | Sleeping _ ->
          Stdlib.Condition.wait s.condition s.mutex;
          wait ()
    in
    let r = wait () in
    Stdlib.Mutex.unlock s.mutex;
    release_sleeper s;
    r)
  else (
    release_sleeper s;
    match Atomic.get cell with
    | Resumed r -> r
    | Waiting | Sleeping _ -> assert false)

let park block =
  let cell = Atomic.make Waiting in
  match block (resume_parked cell) with
  | Some v -> v
  | None -> (
      if not (Spin.until ~pauses:spin_pauses is_resumed cell) then
        unwrap (sleep cell)
      else
        match Atomic.get cell with
        | Resumed r -> unwrap r
        | Waiting | Sleeping _ -> assert false (* Nothing un-resumes. *))

let suspend block =
  try Effect.perform (Suspend block)
  with Effect.Unhandled (Suspend _) -> park block
