(* One event loop: its run queue, the descriptors it watches, its timers and
   signals, the wake-up from other domains, and the turn that polls epoll and
   runs what became ready. Over 500 lines on purpose: the loop's record and a
   descriptor's are mutually recursive (a descriptor knows its loop, the loop
   indexes its descriptors by token), and nearly every function here reads
   both; cut in two, each half would have to export the other's fields. The
   parts that stand alone are their own modules (Timer_heap, Epoll, Syscall,
   Handle's retry loop). *)

open Braid
module Incoming = Saturn.Single_consumer_queue

exception Closed

type stats = {
  fibers : int;
  open_fds : int;
  fd_waiters : int;
  timers : int;
  signal_waiters : int;
}

type fd = {
  loop : t;
  unix : Unix.file_descr;
  socket : bool;
  stream : bool;
      (** A short read drained the receive queue (TCP), unless the peer has
          closed or failed: the end of stream or error is still to be read. *)
  token : int;  (** Index in [loop.fds]; [-1] if epoll cannot watch it. *)
  mutable readers : unit resumer list;
  mutable watcher : unit resumer;
      (** [not_waiting], or the one resumer of {!watch_readable}: a field, not a
          cell of [readers], so that a connection parked between requests
          allocates nothing each time (what a parked connection allocates
          outlives the minor heap, and the collector copies it). *)
  mutable writers : unit resumer list;
  mutable may_be_readable : bool;
      (** False after a read found nothing more to read, until epoll reports the
          descriptor readable: reading then would only get EAGAIN. *)
  mutable hung_up : bool;
      (** Epoll reported a hang-up or error: reads always try, for ever. *)
  mutable is_open : bool;
  mutable switch_release : Switch.hook option;
      (** The owning switch's release of this descriptor: closing it earlier
          takes it back, so a long-lived switch keeps nothing. *)
}

and t = {
  poller : Poller.t;  (** Epoll or an io_uring ring: see {!Poller}. *)
  wake_fd : Unix.file_descr;  (** An eventfd: foreign resumers wake us. *)
  owner : Thread.t;
  runnable : Private.Task_queue.t;  (** Touched only by [owner]. *)
  background : unit Braid.resumer Queue.t;
      (** Resumers of fibers in {!yield_background}, oldest first; touched only
          by [owner]. *)
  incoming : (unit -> unit) Incoming.t;  (** Resumptions from elsewhere. *)
  sleeping : Private.Wake_up.flag;
      (** Set while [owner] is in (or entering) a wait that [wake_fd] ends. *)
  waking : int Atomic.t;
      (** Threads that may be about to write [wake_fd]: it is closed only once
          none is. *)
  timers : Timer_heap.t;
  mutable fds : fd array;
      (** By token; a free token's slot holds [vacant t]. Not an option: at each
          event, a [Some] box would be one more block to fetch from memory, and
          at 10,000 connections it is rarely in the caches. *)
  mutable free_tokens : int list;
  mutable next_token : int;
  mutable open_fds : int;
  mutable fd_waiters : int;
  mutable watching_signals : bool;
  mutable signal_waiters : unit resumer list;
  fibers : Private.Scheduler.tally;
  mutable last_foreign : int;
      (** When a resumption last came from another thread ({!now_ns}). *)
  mutable polls : int;  (** Completed calls of [poll]. *)
  mutable streak : int;
      (** Reads and writes started since the loop last switched fibers. *)
  context : Fiber.context;
      (** The context {!run} was called in: the main fiber's, and the daemons'
          (a daemon outlives whoever forked it, so it keeps none of its
          handlers). *)
  daemons_to_cancel : (int, unit Fiber.handle) Hashtbl.t;
      (** Daemon fibers not yet cancelled, by a number of their own. *)
  mutable daemons : int;  (** Daemon fibers not yet finished. *)
  mutable next_daemon : int;
}

let wake_token = 0
let signal_token = 1
let first_fd_token = 2

(* The descriptor in every free slot of [t.fds]: not open, token [-1]. The
   tokens below [first_fd_token] are never a descriptor's, so their slots
   always hold it. *)
let vacant t = Array.unsafe_get t.fds wake_token

(* Events taken per wait. What dispatching an event touches (the
   descriptor, its watcher, the connection behind it) is touched again when
   the woken fiber runs, after the fibers woken before it: with 512 events
   at once, at 10,000 busy connections, it was gone from the caches by then.
   With 64, user CPU per request was 6 to 16 % lower than with 512 in six
   A/Bs at 100 to 10,000 connections (each within the host's noise alone),
   for one epoll_wait per 64 events. *)
let events_per_wait = 64

(* No one waiting (no watcher, no resumer yet): physically this one. *)
let not_waiting : unit resumer = fun _ -> false

(* A descriptor's record, with no one waiting for it. *)
let make_fd loop unix ~socket ~stream ~token ~is_open =
  {
    loop;
    unix;
    socket;
    stream;
    token;
    readers = [];
    watcher = not_waiting;
    writers = [];
    may_be_readable = true;
    hung_up = false;
    is_open;
    switch_release = None;
  }

external now_ns : unit -> int = "braid_monotonic_ns" [@@noalloc]

let on_loop_thread t = Thread.self () == t.owner

(* The loop running on each domain. Systhreads share their domain's entry;
   [on_loop_thread] tells the loop's own thread apart. *)
let running : t option Domain.DLS.key = Domain.DLS.new_key (fun () -> None)

let current ~op =
  match Domain.DLS.get running with
  | Some t when on_loop_thread t -> t
  | Some _ | None ->
      invalid_arg (op ^ ": must be called from a fiber of Braid_io.run")

let running_here () = Option.is_some (Domain.DLS.get running)

let polls_here () =
  match Domain.DLS.get running with
  | Some t when on_loop_thread t -> Some t.polls
  | Some _ | None -> None

let check_owner t ~op =
  if not (on_loop_thread t) then
    invalid_arg
      (op ^ ": the descriptor belongs to the event loop of another thread")

let check_usable fd ~op =
  if not fd.is_open then raise Closed;
  if not (on_loop_thread fd.loop) then check_owner fd.loop ~op:("Braid_io." ^ op)

(* The loop sleeps in epoll_wait, and the eventfd [wake_fd] in its set ends
   the wait: a write made before the wait starts keeps the eventfd readable,
   so it ends the wait at once, as Wake_up requires. The wait also ends for
   descriptors and timers; [sleep]'s caller dispatches what it found. *)
module Wake = Private.Wake_up.Make (struct
  type nonrec t = t
  type timeout = int (* Milliseconds; -1 for none. *)
  type outcome = int (* Events found. *)

  let flag t = t.sleeping
  let has_work t = not (Incoming.is_empty t.incoming)

  let block t timeout_ms =
    Braid_trace.Probe.loop_waiting ~timeout_ms;
    let events = Poller.wait t.poller ~timeout_ms in
    Braid_trace.Probe.loop_woken_by ~events;
    events

  let poll t = Poller.wait t.poller ~timeout_ms:0
  let wake t = Epoll.eventfd_signal t.wake_fd
end)

let wake_if_sleeping t =
  Atomic.incr t.waking;
  Wake.notify t;
  Atomic.decr t.waking

(* From the loop's thread (the common case: one fiber waking another) the
   local queue needs no atomics. From elsewhere, the queue is the one
   [Wake] watches. *)
let enqueue t task =
  if on_loop_thread t then Private.Task_queue.push t.runnable task
  else
    match Incoming.push t.incoming task with
    | () -> wake_if_sleeping t
    | exception Incoming.Closed ->
        (* The loop has finished, so none of its fibers can be waiting:
           this is a stale resumption with nothing to resume. *)
        ()

(* Runs [task] on the loop's thread; here if the loop has finished. *)
let run_on_loop t task =
  if on_loop_thread t then task ()
  else
    match Incoming.push t.incoming task with
    | () -> wake_if_sleeping t
    | exception Incoming.Closed -> task ()

(* {1 Descriptors} *)

let watched_events =
  Epoll.(readable lor writable lor read_hang_up lor edge_triggered)

let take_token t =
  match t.free_tokens with
  | token :: rest ->
      t.free_tokens <- rest;
      token
  | [] ->
      let token = t.next_token in
      t.next_token <- token + 1;
      if token >= Array.length t.fds then (
        let grown = Array.make (2 * Array.length t.fds) (vacant t) in
        Array.blit t.fds 0 grown 0 (Array.length t.fds);
        t.fds <- grown);
      token

(* Registered once, edge-triggered, for reading and writing: a wait costs no
   system call. Every operation tries its system call first and waits only
   after EAGAIN, so an edge that arrives while nobody waits is not lost: the
   next caller finds the data. *)
let register t unix ~socket ~stream ~op =
  check_owner t ~op;
  let token = take_token t in
  match Poller.add t.poller unix watched_events ~token ~socket with
  | () ->
      let fd = make_fd t unix ~socket ~stream ~token ~is_open:true in
      t.fds.(token) <- fd;
      t.open_fds <- t.open_fds + 1;
      fd
  | exception Unix.Unix_error (Unix.EPERM, _, _) ->
      (* Regular files and directories: always ready, never waited for. *)
      t.free_tokens <- token :: t.free_tokens;
      t.open_fds <- t.open_fds + 1;
      make_fd t unix ~socket ~stream ~token:(-1) ~is_open:true
  | exception e ->
      t.free_tokens <- token :: t.free_tokens;
      raise e

let unix fd = fd.unix
let is_socket fd = fd.socket
let token fd = fd.token

(* TCP sockets only ([stream]): a datagram socket's read of 0 bytes is an
   empty datagram, not the end that Uring_ops remembers, and a datagram's
   tail kept for the next read would be a datagram of its own. *)
let completions fd =
  if fd.stream && fd.socket && fd.token >= 0 then
    Poller.completion_ops fd.loop.poller
  else None

(* Only for descriptors epoll watches: others are never waited for. *)
let may_be_readable fd = fd.may_be_readable || fd.token < 0

(* A peer that hung up has its end of stream (or error) to be read, and no
   further edge will come: it stays readable. *)
let nothing_more_to_read fd = if not fd.hung_up then fd.may_be_readable <- false

let read_returned fd ~wanted n =
  if n > 0 && n < wanted && fd.stream && not fd.hung_up then
    fd.may_be_readable <- false

let is_open fd = fd.is_open

(* Fairness: a fiber whose descriptors are always ready never waits, so it
   would never give the loop back. Every [io_budget] reads and writes it
   starts without the loop switching fibers, it yields: the other runnable
   fibers run, and the loop looks at the descriptors and timers, first.
   One increment and compare per operation; [run_ready] resets the count. *)
let io_budget = 64

let spend fd =
  let t = fd.loop in
  let streak = t.streak + 1 in
  if streak < io_budget then t.streak <- streak
  else (
    t.streak <- 0;
    Fiber.yield ())

let loop_of fd = fd.loop

let withdraw t fd ~write mine =
  let waiters = if write then fd.writers else fd.readers in
  if List.memq mine waiters then (
    let rest = List.filter (fun w -> w != mine) waiters in
    if write then fd.writers <- rest else fd.readers <- rest;
    t.fd_waiters <- t.fd_waiters - 1)

let await_checked fd ~write =
  let t = fd.loop in
  if fd.token >= 0 then (
    Poller.arm t.poller fd.token;
    let mine = ref not_waiting in
    Braid_trace.Probe.waiting_on_descriptor fd.unix;
    match
      suspend (fun resume ->
          mine := resume;
          if write then fd.writers <- resume :: fd.writers
          else fd.readers <- resume :: fd.readers;
          t.fd_waiters <- t.fd_waiters + 1;
          None)
    with
    | () -> ()
    | exception e ->
        let bt = Printexc.get_raw_backtrace () in
        withdraw t fd ~write !mine;
        Printexc.raise_with_backtrace e bt)

let await fd ~write ~op =
  check_usable fd ~op;
  await_checked fd ~write

let wake_all t waiters result =
  match waiters with
  | [] -> ()
  | [ w ] ->
      t.fd_waiters <- t.fd_waiters - 1;
      ignore (w result)
  | many ->
      t.fd_waiters <- t.fd_waiters - List.length many;
      List.iter (fun w -> ignore (w result)) many

(* The watcher, taken off before it is called. *)
let wake_watcher t fd result =
  let w = fd.watcher in
  if w != not_waiting then (
    fd.watcher <- not_waiting;
    t.fd_waiters <- t.fd_waiters - 1;
    ignore (w result))

let interrupt_readers fd e =
  check_usable fd ~op:"Fd.interrupt";
  let readers = fd.readers and error = Error e in
  fd.readers <- [];
  (match completions fd with
  | Some ops -> Uring_ops.interrupt_reader ops ~token:fd.token e
  | None -> ());
  wake_all fd.loop readers error;
  wake_watcher fd.loop fd error

let watch_readable fd resumer =
  check_usable fd ~op:"Fd.watch_input";
  let t = fd.loop in
  if fd.token >= 0 then (
    Poller.arm t.poller fd.token;
    if fd.watcher != not_waiting then
      invalid_arg "Braid_io.Fd.watch_input: the descriptor is already watched";
    fd.watcher <- resumer;
    t.fd_waiters <- t.fd_waiters + 1)
  else Private.Task_queue.push t.runnable (fun () -> ignore (resumer (Ok ())))

let set_switch_release fd hook = fd.switch_release <- Some hook

let close_now fd =
  if fd.is_open then (
    fd.is_open <- false;
    Option.iter Switch.remove_release fd.switch_release;
    fd.switch_release <- None;
    let t = fd.loop in
    if fd.token >= 0 then (
      (* Closing alone would leave the registration alive if the descriptor
         was duplicated (dup, fork), and its events would then reach
         whatever reuses the token. *)
      (try Poller.remove t.poller fd.unix ~token:fd.token
       with Unix.Unix_error _ -> ());
      t.fds.(fd.token) <- vacant t;
      t.free_tokens <- fd.token :: t.free_tokens);
    t.open_fds <- t.open_fds - 1;
    let readers = fd.readers and writers = fd.writers in
    fd.readers <- [];
    fd.writers <- [];
    wake_all t readers (Error Closed);
    wake_all t writers (Error Closed);
    wake_watcher t fd (Error Closed);
    try Unix.close fd.unix
    with Unix.Unix_error (Unix.EINTR, _, _) ->
      (* Linux has released the descriptor anyway; retrying could close a
         descriptor someone else just opened. *)
      ())

let close fd =
  if on_loop_thread fd.loop then close_now fd
  else
    run_on_loop fd.loop (fun () ->
        try close_now fd with Unix.Unix_error _ -> ())

(* {1 Timers} *)

let add_timer t ~deadline action = Timer_heap.add t.timers ~deadline action
let remove_timer t timer = Timer_heap.remove t.timers timer

(* What a sleeping fiber holds beyond its stack: the timer, whose action is
   its resumer, and the block below (kept by [suspend]). *)
let sleep_until t ~deadline =
  check_owner t ~op:"Braid_io.Time.sleep";
  let timer = Timer_heap.timer ~deadline in
  Braid_trace.Probe.waiting_on_timer ~deadline_ns:deadline;
  match
    suspend (fun resume ->
        Timer_heap.schedule t.timers timer resume;
        None)
  with
  | () -> ()
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      Timer_heap.remove t.timers timer;
      Printexc.raise_with_backtrace e bt

(* {1 Signals} *)

let watch_signals t signal_fd =
  if not t.watching_signals then (
    Poller.add t.poller signal_fd
      Epoll.(readable lor edge_triggered)
      ~token:signal_token ~socket:false;
    t.watching_signals <- true)

let await_signal_event t =
  let mine = ref not_waiting in
  match
    suspend (fun resume ->
        mine := resume;
        t.signal_waiters <- resume :: t.signal_waiters;
        None)
  with
  | () -> ()
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      t.signal_waiters <- List.filter (fun w -> w != !mine) t.signal_waiters;
      Printexc.raise_with_backtrace e bt

(* {1 The loop} *)

let stats t =
  {
    fibers = Private.Scheduler.live t.fibers;
    open_fds = t.open_fds;
    fd_waiters = t.fd_waiters + Poller.op_waiters t.poller;
    timers = Timer_heap.length t.timers;
    signal_waiters = List.length t.signal_waiters;
  }

let create backend =
  let poller = Poller.create backend ~events:events_per_wait in
  match Epoll.eventfd () with
  | exception e ->
      Poller.close poller;
      raise e
  | wake_fd -> (
      match
        Poller.add poller wake_fd Epoll.readable ~token:wake_token ~socket:false
      with
      | exception e ->
          Unix.close wake_fd;
          Poller.close poller;
          raise e
      | () ->
          let t =
            {
              poller;
              wake_fd;
              owner = Thread.self ();
              runnable = Private.Task_queue.create ();
              background = Queue.create ();
              incoming = Incoming.create ();
              sleeping = Private.Wake_up.flag ();
              waking = Atomic.make 0;
              timers = Timer_heap.create ();
              fds = [||];
              free_tokens = [];
              next_token = first_fd_token;
              open_fds = 0;
              fd_waiters = 0;
              watching_signals = false;
              signal_waiters = [];
              fibers = Private.Scheduler.tally ();
              last_foreign = min_int;
              polls = 0;
              streak = 0;
              context = Fiber.context ();
              daemons_to_cancel = Hashtbl.create 4;
              daemons = 0;
              next_daemon = 0;
            }
          in
          let vacant =
            make_fd t wake_fd ~socket:false ~stream:false ~token:(-1)
              ~is_open:false
          in
          t.fds <- Array.make 64 vacant;
          t)

let make_ops t =
  Private.Scheduler.single_threaded t.fibers t.runnable ~enqueue:(enqueue t)

let foreign_batch = 1024

(* Runs what is runnable now; what these tasks make runnable waits for the
   next turn, after a look at the descriptors, so IO is never starved. *)
let run_ready t =
  for _ = 1 to Private.Task_queue.length t.runnable do
    t.streak <- 0;
    (Private.Task_queue.pop t.runnable) ()
  done;
  let rec drain n =
    if n > 0 then
      match Incoming.pop_opt t.incoming with
      | Some task ->
          t.streak <- 0;
          task ();
          drain (n - 1)
      | None -> n
    else n
  in
  if drain foreign_batch < foreign_batch then t.last_foreign <- now_ns ()

(* epoll_wait counts in milliseconds: round up, or we would wake before the
   deadline and spin until it. *)
let max_timeout_ms = 1_000_000_000

let timeout_until deadline =
  if deadline = max_int then -1
  else
    let remaining = deadline - now_ns () in
    if remaining <= 0 then 0
    else min max_timeout_ms ((remaining + 999_999) / 1_000_000)

let dispatch t n =
  let vacant = vacant t in
  for i = 0 to n - 1 do
    let token = Poller.token t.poller i in
    if token >= first_fd_token then (
      let fd = t.fds.(token) in
      if fd != vacant then (
        let flags = Poller.flags t.poller i in
        if
          (flags land Epoll.(readable lor read_hang_up lor hang_up lor error))
          <> 0
        then (
          fd.may_be_readable <- true;
          if (flags land Epoll.(read_hang_up lor hang_up lor error)) <> 0 then
            fd.hung_up <- true;
          if fd.readers != [] then (
            let readers = fd.readers in
            fd.readers <- [];
            wake_all t readers (Ok ()));
          wake_watcher t fd (Ok ()));
        if
          (flags land Epoll.(writable lor hang_up lor error)) <> 0
          && fd.writers != []
        then (
          let writers = fd.writers in
          fd.writers <- [];
          wake_all t writers (Ok ()))))
    else if token = wake_token then Epoll.eventfd_drain t.wake_fd
    else if token = signal_token then (
      let waiters = t.signal_waiters in
      t.signal_waiters <- [];
      List.iter (fun w -> ignore (w (Ok ()))) waiters)
  done

(* Before sleeping, a loop that was resumed from another thread in the last
   [spin_window_ns] polls without blocking for up to [spin_ns]: a pool
   worker answering an IO fiber, say, often answers again within
   microseconds, and catching that without sleeping saves the worker an
   eventfd write and this thread a wake-up (3 to 20 us here, more on a busy
   host). The cost is bounded: at most [spin_ns] of CPU per foreign
   resumption, and none for a loop that only waits for descriptors and
   timers, or is idle. The spin polls epoll rather than pausing on the queue
   alone: on a virtual machine a loop of [pause] instructions can make the
   hypervisor deschedule the virtual CPU. *)
let spin_ns = 20_000
let spin_window_ns = 1_000_000

(* The number of events found, or [0] once a foreign resumption arrived, a
   ring operation's completion made a fiber runnable, or [until] passed. *)
let rec spin t ~until =
  let n = Poller.wait t.poller ~timeout_ms:0 in
  if
    n > 0
    || (not (Incoming.is_empty t.incoming))
    || not (Private.Task_queue.is_empty t.runnable)
  then n
  else if now_ns () < until then spin t ~until
  else 0

let wait_idle t ~deadline ~timeout =
  if t.last_foreign = min_int then Wake.sleep t timeout
  else
    let now = now_ns () in
    if now - t.last_foreign > spin_window_ns then Wake.sleep t timeout
    else
      let n = spin t ~until:(now + spin_ns) in
      if
        n > 0
        || (not (Incoming.is_empty t.incoming))
        || not (Private.Task_queue.is_empty t.runnable)
      then n
      else
        match timeout_until deadline with
        | 0 -> Poller.wait t.poller ~timeout_ms:0
        | timeout -> Wake.sleep t timeout

let poll t =
  let n =
    if
      not (Private.Task_queue.is_empty t.runnable && Queue.is_empty t.background)
    then Poller.wait t.poller ~timeout_ms:0
    else
      let deadline = Timer_heap.next_deadline t.timers in
      match timeout_until deadline with
      | 0 -> Poller.wait t.poller ~timeout_ms:0
      | timeout -> wait_idle t ~deadline ~timeout
  in
  t.polls <- t.polls + 1;
  dispatch t n;
  if Timer_heap.length t.timers > 0 then (
    let now = now_ns () in
    (* Timers are due but no descriptor was reported: after a long sleep
       (the process stopped, or starved), bytes may have arrived meanwhile
       that the wait did not report. Look once more, so that a read that
       got its bytes in time is woken before its timeout fires. *)
    if n = 0 && Timer_heap.next_deadline t.timers <= now then
      dispatch t (Poller.wait t.poller ~timeout_ms:0);
    Timer_heap.fire_due t.timers ~now)

(* {1 Background work}

   A fiber about to do a long stretch of work that no client is waiting on
   right now (a TLS handshake's public-key operations: 0.1 to 0.5 ms each)
   yields here first. Run as ordinary fibers, 100 handshakes woken by one
   poll ran back to back, and a plain request, which needs two or three turns
   of the loop (accept, read, answer), waited for the whole batch at each
   turn: 100 to 400 ms under a flood of ClientHellos. Here they are let into
   the run queue [background_per_turn] at a time, after the fibers the poll
   woke: a turn does at most that much of such work on top of the rest, and
   what is queued still progresses at every turn, whatever the other load. *)

(* Measured with scripts/tls-handshake-flood.py (docs/server.md, HTTPS). *)
let background_per_turn = 4

(* [t] is the calling thread's loop ([Loop.current] checked it). *)
let yield_background t =
  suspend (fun resume ->
      Queue.push resume t.background;
      None)

(* A fiber cancelled meanwhile was woken by its cancellation: its resumer
   answers [false] and takes no admission, so that evicted handshakes do not
   use up the turn's share of those still waiting. *)
let rec admit_background t n =
  if n > 0 && not (Queue.is_empty t.background) then
    admit_background t (if (Queue.pop t.background) (Ok ()) then n - 1 else n)

(* {1 Daemon fibers}

   A daemon serves the other fibers of its loop (a database pool's keeper of
   its connections on this loop, say) and has no end of its own: counted as
   a fiber, it would keep [run] from ever returning. So when only daemons
   are left, the loop cancels them; they unwind (closing what they keep,
   which may wait for IO) and [run] returns once they have finished. *)

let fork_daemon t f =
  check_owner t ~op:"Braid_io.fork_daemon";
  let number = t.next_daemon in
  t.next_daemon <- number + 1;
  let fiber, handle, body =
    Private.Fiber.prepare (fun () ->
        Fun.protect f ~finally:(fun () ->
            t.daemons <- t.daemons - 1;
            Hashtbl.remove t.daemons_to_cancel number))
  in
  Private.Fiber.set_context fiber t.context;
  t.daemons <- t.daemons + 1;
  Hashtbl.replace t.daemons_to_cancel number handle;
  Private.Task_queue.push t.runnable
    (Private.Scheduler.track t.fibers (make_ops t) fiber body)

(* Each daemon is cancelled once; one forked while the others unwind is
   cancelled at the next turn. *)
let cancel_daemons t =
  let handles = Hashtbl.fold (fun _ h acc -> h :: acc) t.daemons_to_cancel [] in
  Hashtbl.reset t.daemons_to_cancel;
  List.iter Fiber.cancel handles

let rec schedule t =
  run_ready t;
  let live = Private.Scheduler.live t.fibers in
  if live > 0 then (
    if live = t.daemons && Hashtbl.length t.daemons_to_cancel > 0 then
      cancel_daemons t;
    poll t;
    admit_background t background_per_turn;
    schedule t)

(* Descriptors still open belong to no live fiber: close them, then run the
   close requests that other threads may have queued meanwhile. *)
let shut_down t =
  let vacant = vacant t in
  Array.iter
    (fun fd ->
      if fd != vacant then try close_now fd with Unix.Unix_error _ -> ())
    t.fds;
  Incoming.close t.incoming;
  (try
     while true do
       (Incoming.pop_exn t.incoming) ()
     done
   with Incoming.Closed | Incoming.Empty -> ());
  (* A thread that pushed before the close may still be deciding whether to
     write [wake_fd]; it will not write once it sees [sleeping] false, which
     it now is for good. Closing under it could hand its write to whatever
     reuses the descriptor number. Those threads change [waking] while we
     read it: backing off keeps our reads out of their way. *)
  let rec await_wakers backoff =
    if Atomic.get t.waking > 0 then await_wakers (Backoff.once backoff)
  in
  await_wakers Backoff.default;
  Poller.close t.poller;
  Unix.close t.wake_fd

let backend t = Poller.backend t.poller

let run ?(backend = Poller.default_backend ()) main =
  (match Domain.DLS.get running with
  | Some _ ->
      invalid_arg
        "Braid_io.run: this domain is already running an event loop (one per \
         domain)"
  | None -> ());
  let t = create backend in
  Domain.DLS.set running (Some t);
  (* sendfile(2) has no MSG_NOSIGNAL: a loop's thread blocks SIGPIPE while
     it runs (see sendfile_stubs.c). *)
  let sigpipe_was_blocked = Syscall.block_sigpipe () in
  Fun.protect
    ~finally:(fun () ->
      Domain.DLS.set running None;
      shut_down t;
      if not sigpipe_was_blocked then Syscall.unblock_sigpipe ())
    (fun () ->
      let fiber, handle, body = Private.Fiber.prepare main in
      Private.Fiber.set_context fiber (Fiber.context ());
      let ops = make_ops t in
      Private.Scheduler.track t.fibers ops fiber body ();
      schedule t;
      Private.Scheduler.result t.fibers ~main:fiber handle)
