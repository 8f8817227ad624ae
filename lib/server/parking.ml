open Braid_io
open Registry

(* Connections holding buffers while idle beyond which they give them back
   at once. *)
let crowd = 256

(* Plain connections waiting in their fibers beyond which an idle one parks
   at once: a crowd of idle connections holds no fiber stack each (OCaml's
   runtime keeps a freed stack for reuse, so a stack once taken by each of
   10,000 idle connections would stay with the process). A few busy ones
   keep theirs between requests: a wait in the fiber is one effect, while
   leaving parking sets the pipeline up again. Beyond a few dozen, parking
   costs less CPU per request too: the fibers' stacks no longer fit the
   caches (docs/server.md). *)
let crowd_in_fibers = 32

(* Fibers kept waiting for the next woken connection once theirs has parked
   or ended: a connection woken then costs a resumption, not a fiber made
   with its handlers and a stack grown again; a few serve a loop's bursts,
   and each keeps a stack. *)
let idle_workers_kept = 4

let wake_unparker c =
  match c.unparker with
  | Some resume ->
      c.unparker <- None;
      ignore (resume (Ok ()))
  | None -> ()

(* A fiber waiting for a woken connection takes [p], if there is one. *)
let rec give_to_idle_worker c p =
  match c.idle_workers with
  | [] -> false
  | resume :: others ->
      c.idle_workers <- others;
      (* [false]: that fiber was cancelled meanwhile. *)
      resume (Ok p) || give_to_idle_worker c p

(* Told to an idle worker when the server drains: it ends. *)
exception No_more_work

let stop_idle_workers c =
  let idle = c.idle_workers in
  c.idle_workers <- [];
  List.iter (fun resume -> ignore (resume (Error No_more_work))) idle

(* Many connections holding buffers while they wait: give them back now
   rather than a tick later, so that a crowd of idle connections never holds
   a buffer each. Few: keep them, which saves taking them again at the next
   request. *)
let awaiting_input c (config : Config.t) await (progress : Progress.t) =
  if Buffer_pool.out (pool c config.output_buffer) > crowd then
    progress.release ();
  await ()

(* The resumer of a parked connection's watch: input, or an error (it is
   to be closed: [end_live], or the loop closing the socket). Runs on the
   loop outside any fiber: it only queues the connection for the
   unparker. *)
let wake_parked c p : unit Braid.resumer =
 fun result ->
  match p.state with
  | Watching ->
      p.state <- Woken;
      c.parked_sockets <- c.parked_sockets - 1;
      if Result.is_error result then p.doomed <- true;
      if not (give_to_idle_worker c p) then (
        Queue.push p c.ready;
        wake_unparker c);
      true
  | Running _ | Between | Woken | Ended -> false

(* A socket connection's wait for its next request inside its fiber,
   counted for [crowd_in_fibers]. *)
let wait_in_fiber c config progress await =
  c.waiting_in_fiber <- c.waiting_in_fiber + 1;
  match awaiting_input c config await progress with
  | () -> c.waiting_in_fiber <- c.waiting_in_fiber - 1
  | exception e ->
      c.waiting_in_fiber <- c.waiting_in_fiber - 1;
      raise e

(* A socket the loop has seen no edge of yet (a fresh connection, or one
   whose reads OpenSSL makes) counts as readable: a look tells whether its
   request is there, so that one still waiting waits like any idle
   connection (counted, and parked by the sweeper). An end of stream or an
   error is for the read to find. *)
let settle_readiness socket =
  if Fd.may_have_input socket && peek socket = `Nothing then
    Fd.read_would_block socket

(* Beyond [crowd_in_fibers] waiting in their fibers, an idle connection
   with nothing to read parks at once (its buffers given back). *)
let park_if_crowded c (progress : Progress.t) socket =
  if
    (not (Fd.may_have_input socket))
    && c.waiting_in_fiber >= crowd_in_fibers
    && not (Atomic.get c.draining)
  then (
    progress.release ();
    raise Unwind.Park)

(* The resumer of a parked TLS connection's watch: input, or an error (to
   be closed). On the loop outside any fiber, as [wake_parked]: it only
   queues the connection for the unparker. *)
let wake_secure c s : unit Braid.resumer =
 fun result ->
  match s.s_state with
  | Watching ->
      s.s_state <- Woken;
      c.parked_sockets <- c.parked_sockets - 1;
      if Result.is_error result then s.s_doomed <- true;
      Queue.push s c.woken_tls;
      wake_unparker c;
      true
  | Running _ | Between | Woken | Ended -> false

(* [p], its pipeline over, parks: [true] once its socket is watched (what
   it keeps is itself, the socket's registration and the watch's
   resumer); [false] if it must go on waiting in its fiber. *)
let park_plain c p =
  let progress = p.p_progress in
  (* They would keep the pipeline's buffers and records alive. *)
  progress.release <- ignore;
  progress.idle_rounds <- 0;
  if p.doomed || Fd.may_have_input p.socket || Atomic.get c.draining then
    (* To be closed; or bytes came while it was leaving its handlers; or the
       server is draining, and the unparker may have stopped: it waits in a
       read of its fiber, which [close_idle] ends. *)
    false
  else (
    Fd.watch_input p.socket p.wake;
    p.state <- Watching;
    c.parked_sockets <- c.parked_sockets + 1;
    true)

(* The next woken connection for a fiber whose connection has parked or
   ended: the unparker would otherwise make a fiber for it, with its
   handlers, and grow its stack again. None queued: while fewer than
   [idle_workers_kept] fibers do and the server is not draining, it waits
   for one as an idle worker. *)
let next_plain c =
  match Queue.take_opt c.ready with
  | Some _ as p -> p
  | None
    when List.compare_length_with c.idle_workers idle_workers_kept < 0
         && not (Atomic.get c.draining) -> (
      match
        Braid.suspend (fun resume ->
            c.idle_workers <- resume :: c.idle_workers;
            None)
      with
      | p -> Some p
      | exception No_more_work -> None)
  | None -> None

(* [s], its pipeline over (or silent since its accept), parks: [`Watching]
   once its socket is watched, [`Stays] if it must go on in its fiber,
   [`Failed] if its socket cannot be watched (to be closed). *)
let park_secure c s =
  let progress = s.s_progress in
  (* They would keep the pipeline's buffers and records alive. *)
  progress.release <- ignore;
  progress.idle_rounds <- 0;
  if
    s.s_doomed
    || Fd.may_have_input s.s_socket
    || Option.fold ~none:false ~some:Braid_tls.Connection.buffered s.session
    || Atomic.get c.draining
  then
    (* To be closed; or bytes came (or OpenSSL holds some) while it left its
       handlers; or the server drains, and the unparker may have stopped:
       it waits in its fiber, which [close_idle] ends. *)
    `Stays
  else
    match Fd.watch_input s.s_socket s.s_wake with
    | () ->
        s.s_state <- Watching;
        c.parked_sockets <- c.parked_sockets + 1;
        `Watching
    | exception Braid_io.Io_error _ -> `Failed

(* The next woken TLS connection, for a fiber whose own has parked. *)
let next_secure c = Queue.take_opt c.woken_tls

(* The unparker's wait for a woken connection, or for the drain. *)
let await_woken c =
  match
    Braid.suspend (fun resume ->
        c.unparker <- Some resume;
        None)
  with
  | () -> ()
  | exception e ->
      c.unparker <- None;
      raise e

let close_parked c =
  let left =
    Hashtbl.fold
      (fun _ l left ->
        match l with
        | Plain ({ state = Watching | Woken; _ } as p) -> `Plain p :: left
        | Secure ({ s_state = Watching | Woken; _ } as f) -> `Secure f :: left
        | Plain _ | Secure _ | Fibered _ -> left)
      c.live []
  in
  List.iter
    (function `Plain p -> finish_plain c p | `Secure f -> finish_secure c f)
    left
