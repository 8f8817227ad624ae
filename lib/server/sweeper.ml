open Braid_web
open Braid_io
open Registry

(* The sweeper's count of its looks at one idle wait: the second or later. *)
let seen_twice (progress : Progress.t) =
  progress.idle_rounds <- progress.idle_rounds + 1;
  progress.idle_rounds >= 2

(* Marlow's timeout manager: one fiber per loop cancels the connections
   idle past their deadline or stuck in a write past theirs (a client that
   stopped reading), so a connection costs no timer and no fiber of its own.
   A deadline is met within one tick. An idle connection with a request
   waiting is left alone: after a pause of the whole process (SIGSTOP, a VM
   pause, starvation) the sweeper's timer and the client's bytes are both
   due, and the sweeper may run first; the request arrived in time. *)
let rec sweep c =
  let services = Services.current () in
  services.sleep c.tick;
  let now = services.monotonic_ns () in
  let idle = ref 0 in
  let draining = Atomic.get c.draining in
  let expired =
    Hashtbl.fold
      (fun _ l acc ->
        let progress = progress_of l in
        if not draining then release_if_waiting l;
        if Progress.is_idle progress then incr idle;
        if
          Progress.is_idle progress
          && now >= Progress.idle_deadline progress
          && not (pending l)
          || Progress.send_stalled progress ~now
        then l :: acc
        else acc)
      c.live []
  in
  List.iter end_live expired;
  Atomic.set c.idle !idle;
  give_back_memory c ~idle:!idle;
  sweep c

(* After a burst the heap keeps the memory it used: OCaml returns it to the
   system only when it compacts. A compaction pauses the loop's domain (and
   the others), so it is done in a lull, and once per burst:
   - when the connections have fallen to an eighth of their peak (a burst
     of connections, now mostly gone);
   - when every connection waits for a request, none holds a buffer (the
     sweeper has taken them back), and there are twice as many as at the
     last compaction (a burst of connections, now idle: what their requests
     left in the heap is garbage, and a parked connection takes a few
     hundred bytes). *)
and give_back_memory c ~idle =
  let live = Hashtbl.length c.live in
  let compact () =
    List.iter Buffer_pool.trim c.pools;
    System.give_back_memory ();
    c.compacted_at <- live
  in
  if c.peak >= burst && live <= c.peak / 8 then (
    c.peak <- live;
    compact ())
  else if
    live >= burst && idle = live
    && live >= 2 * c.compacted_at
    && buffers_held c = 0
  then compact ()

(* A connection seen waiting for its next request at two looks in a row
   or more (idle a tick at least) gives its buffers back to the pool and is parked
   (it waits outside its handlers, whose stacks are freed): an idle
   connection holds neither, and one between requests under load keeps
   them (taking and giving at every request would cost write barriers, and
   entering the handlers again would grow their stacks again). One that
   waits in its idle read (woken by a readiness event whose bytes an
   earlier read had taken) is parked the same way; its read holds the input
   buffer, so the pipeline gives its buffers back once the read is
   interrupted, not the sweeper before. *)
and release_if_waiting l =
  let progress = progress_of l in
  match progress.idle_wait with
  | Awaiting ->
      if seen_twice progress then (
        progress.release ();
        park_waiting l)
  | Reading -> if seen_twice progress then park_waiting l
  | Not_waiting -> progress.idle_rounds <- 0

(* Its wait or idle read (so it runs) raises [Park]: the connection
   waits again outside its handlers. One whose wait cannot be interrupted
   keeps waiting where it is. *)
and park_waiting = function
  | Fibered { interrupt = Some interrupt; progress; _ } ->
      if not progress.parked then interrupt Unwind.Park
  | Fibered { interrupt = None; _ } -> ()
  | Plain p -> (
      if not p.p_progress.parked then
        try Fd.interrupt p.socket Unwind.Park with Braid_io.Io_error _ -> ())
  | Secure { s_state = Running _; s_progress; s_socket; _ } -> (
      if not s_progress.parked then
        try Fd.interrupt s_socket Unwind.Park with Braid_io.Io_error _ -> ())
  | Secure _ -> (* Not in a fiber: parked already, or about to run. *) ()
