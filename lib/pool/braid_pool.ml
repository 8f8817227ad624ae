open Braid
module Promise = Braid_sync.Promise
module Deque = Saturn.Work_stealing_deque
module Injection = Saturn.Queue
module Probe = Braid_trace.Probe

type task = unit -> unit

type worker = {
  deque : task Deque.t;
      (** Owner pushes and pops (newest first); the others steal (oldest). *)
  mutable taken : int;  (** Tasks looked for; drives {!fairness_period}. *)
  mutable seed : int;  (** Victim selection; touched only by the owner. *)
}

type t = {
  workers : worker array;
  injection : task Injection.t;  (** Work from outside the workers. *)
  parking : Parking.t;
  live : int Atomic.t;
      (** Tasks and fibers submitted and not finished, plus callers of [async]
          between their check of [stopping] and their submission. Workers exit
          once [stopping] is set and this is 0. *)
  stopping : bool Atomic.t;
  exited : int Atomic.t;  (** Workers that left their loop. *)
  all_exited : unit Promise.t;
  joining : bool Atomic.t;  (** Someone joins the domains. *)
  joined : unit Promise.t;
  domains : unit Domain.t array Atomic.t;  (** Set once by [create]. *)
  failed : (unit -> (exn * Printexc.raw_backtrace) option) list Atomic.t;
      (** Forked fibers and tasks that failed, newest first: each tells its
          failure if nobody has observed it yet. *)
  ops : Private.Scheduler.ops;
}

(* Which pool worker, if any, the calling domain runs. It must be found from
   a resumer, which is given nothing but a task, hence the domain-local key.
   [thread] tells the worker itself apart from a systhread that a task
   started on the worker's domain: only the worker may push on its deque. *)
type here = { pool : t; worker : worker; thread : Thread.t }

let here : here option Domain.DLS.key = Domain.DLS.new_key (fun () -> None)

let on_worker t =
  match Domain.DLS.get here with
  | Some h -> h.pool == t && h.thread == Thread.self ()
  | None -> false

let schedule t task =
  (match Domain.DLS.get here with
  | Some h when h.pool == t && h.thread == Thread.self () ->
      Deque.push h.worker.deque task
  | _ -> Injection.push t.injection task);
  Parking.notify t.parking

(* A task, a forked fiber, or an aborted submission is over. *)
let release t =
  if Atomic.fetch_and_add t.live (-1) = 1 && Atomic.get t.stopping then
    Parking.notify_all t.parking

let rec record_failure t unobserved =
  let seen = Atomic.get t.failed in
  if not (Atomic.compare_and_set t.failed seen (unobserved :: seen)) then
    record_failure t unobserved

(* Every task, and every fiber forked in one, runs on a fiber of its own,
   whose stack the runtime starts at 512 bytes and doubles (by copying) when
   a call needs more. On the project machine (AMD EPYC under KVM), a
   computation whose stack grew while it ran went ~12% slower than the same
   computation on a stack already big enough, for the same instructions: fib
   32 as one task took 11.1-11.2 ms against 9.8-9.9 ms on the main domain,
   and 9.8 ms again once the task's stack had been grown beforehand (bench
   [fib]: rows "inside the task" and "in an effect handler"; growing it to
   1 KB first was not enough, 2 KB was). So a task first grows its stack to
   2 KB, which typical task bodies then fit in: [grow_frames] calls of a
   72-byte frame. It costs two reallocations up front (512 bytes to 1 KB to
   2 KB), which a task that needs the room would have made anyway and a
   small one would not: by callgrind, a trivial nested [async] + [await]
   went from ~2,050 to ~4,300 instructions, while fib 32 cut into 609 tasks
   gained ~12% of wall time. A task that blocks holds at least 2 KB. *)
let grow_frames = 16

(* Eight values live across the call: a frame of 72 bytes. *)
let rec grow n =
  if n = 0 then 0
  else
    let a = Sys.opaque_identity n and b = Sys.opaque_identity (n + 1) in
    let c = Sys.opaque_identity (n + 2) and d = Sys.opaque_identity (n + 3) in
    let e = Sys.opaque_identity (n + 4) and f = Sys.opaque_identity (n + 5) in
    let g = Sys.opaque_identity (n + 6) and h = Sys.opaque_identity (n + 7) in
    let r = grow (n - 1) in
    a + b + c + d + e + f + g + h + r

let grow_stack () = ignore (Sys.opaque_identity (grow grow_frames))

let spawn t fiber body =
  Atomic.incr t.live;
  schedule t (fun () ->
      Private.Scheduler.run_fiber t.ops fiber (fun () ->
          grow_stack ();
          body ();
          if Option.is_some (Private.Fiber.unobserved_failure fiber) then
            record_failure t (fun () -> Private.Fiber.unobserved_failure fiber);
          release t))

(* The worker loop. *)

(* Every [fairness_period]th task is taken from the oldest end: the injection
   queue, then the bottom of the own deque. Otherwise a task that yields in a
   loop (its continuation goes back on top of the deque) would keep a worker
   for itself, and on a one-worker pool wait forever for work behind it. *)
let fairness_period = 61

let next_victim w n =
  (* xorshift: a cheap, per-worker pseudo-random start for the steal scan. *)
  let s = w.seed in
  let s = s lxor (s lsl 13) in
  let s = s lxor (s lsr 7) in
  let s = s lxor (s lsl 17) in
  w.seed <- s;
  s land max_int mod n

(* Only when traced: which worker [w] is. *)
let index_of t w =
  let rec find i = if t.workers.(i) == w then i else find (i + 1) in
  find 0

let steal t w =
  let n = Array.length t.workers in
  let start = next_victim w n in
  let rec scan i =
    if i = n then None
    else
      let victim = t.workers.((start + i) mod n) in
      if victim == w then scan (i + 1)
      else
        match Deque.steal_opt victim.deque with
        | Some _ as found ->
            if Probe.enabled () then
              Probe.pool_stolen ~thief:(index_of t w) ~victim:((start + i) mod n);
            found
        | None -> scan (i + 1)
  in
  if n = 1 then None else scan 0

let find_task t w =
  w.taken <- w.taken + 1;
  if w.taken mod fairness_period = 0 then
    match Injection.pop_opt t.injection with
    | Some _ as found -> found
    | None -> (
        match Deque.steal_opt w.deque with
        | Some _ as found -> found
        | None -> steal t w)
  else
    match Deque.pop_opt w.deque with
    | Some _ as found -> found
    | None -> (
        match Injection.pop_opt t.injection with
        | Some _ as found -> found
        | None -> steal t w)

(* Before sleeping, look for work for about 100 microseconds: a parent
   about to push subtasks, or a resumer on another domain, usually gives us
   something within that window, and a futex sleep plus wake-up costs more
   (~50 us each way on the project machine). Between looks the searcher backs
   off with the packaged randomized exponential policy ([Backoff]): the first
   looks come quickly (new work is usually found within a few microseconds),
   later ones less often, so the cache lines of the queues that busy workers
   push on and pop from are left alone. Twenty looks with random waits below
   2^4, 2^5, .., 2^8, 2^8, .. [cpu_relax] (~30 ns each here) average ~2,150
   relaxes (measured: 71 us median), and a look is never more than ~8 us
   late. *)
let search_backoff = Backoff.create ~lower_wait_log:4 ~upper_wait_log:8 ()
let search_looks = 20

let rec search t w backoff looks =
  match find_task t w with
  | Some _ as found -> found
  | None ->
      if looks = 0 then None else search t w (Backoff.once backoff) (looks - 1)

type next = Run of task | Exit

let poll t w () =
  match find_task t w with
  | Some task -> Some (Run task)
  | None ->
      if Atomic.get t.stopping && Atomic.get t.live = 0 then Some Exit else None

let rec work t w =
  match find_task t w with
  | Some task ->
      task ();
      work t w
  | None -> idle t w

and idle t w =
  let found =
    if Parking.try_search t.parking then (
      let found = search t w search_backoff search_looks in
      Parking.stop_searching t.parking;
      found)
    else None
  in
  match found with
  | Some task ->
      (* Submissions from outside that arrived while we searched did not wake
         anyone: if some are left, a sleeper should take them. (Workers that
         push on their deque notify on their next push.) *)
      if not (Injection.is_empty t.injection) then Parking.notify t.parking;
      task ();
      work t w
  | None -> (
      Probe.flush ();
      match Parking.park t.parking (poll t w) with
      | Some (Run task) -> woken_with t w task
      | Some Exit -> ()
      | None -> (
          (* Woken: work has been published. *)
          match find_task t w with
          | Some task -> woken_with t w task
          | None -> idle t w))

(* Work tends to come in bursts: a sleeper that found some lets another
   sleeper look too. *)
and woken_with t w task =
  Parking.notify t.parking;
  task ();
  work t w

let worker_main t w () =
  Domain.DLS.set here (Some { pool = t; worker = w; thread = Thread.self () });
  work t w;
  Domain.DLS.set here None;
  if Atomic.fetch_and_add t.exited 1 = Array.length t.workers - 1 then
    Promise.fill t.all_exited ()

(* Submission. *)

let admit t =
  Atomic.incr t.live;
  if Atomic.get t.stopping && not (on_worker t) then (
    release t;
    invalid_arg "Braid_pool.async: the pool is shut down")

let async t f =
  admit t;
  let promise = Promise.create () in
  (* The task runs in its submitter's context (its bindings, and its
     inherited handlers re-installed on the worker), and is cancelled with
     it: a timeout or a switch around the submitter stops the work it
     started, at the task's blocking calls. *)
  let submitter, context = Private.Fiber.submitter () in
  let fiber =
    Private.Fiber.create
      ~cancelled_with:(Private.Fiber.cancellation_of submitter)
      ()
  in
  Private.Fiber.set_context fiber context;
  if Probe.enabled () then
    Probe.pool_submitted ~task:(Private.Fiber.id fiber)
      ~submitter:
        (match submitter with Some f -> Private.Fiber.id f | None -> 0);
  schedule t (fun () ->
      Private.Scheduler.run_fiber t.ops fiber (fun () ->
          (match
             (* Not even started if cancelled while queued. (The fiber is at
                hand: [Fiber.check] would perform an effect to find it.) *)
             if Private.Fiber.is_cancelled_fiber fiber then
               raise Braid.Cancelled;
             Probe.pool_running ~task:(Private.Fiber.id fiber);
             grow_stack ();
             Private.Fiber.run_in_context context f
           with
          | v -> Promise.fill promise v
          | exception e ->
              let backtrace = Printexc.get_raw_backtrace () in
              Promise.fill_error ~backtrace promise e;
              (* A cancelled task's [Cancelled] is no failure; any other
                 is reported by [shutdown] unless someone awaits it. *)
              if
                not
                  (e == Braid.Cancelled
                  && Private.Fiber.is_cancelled_fiber fiber)
              then record_failure t (fun () -> Promise.unobserved_error promise));
          Probe.fiber_finished (Private.Fiber.id fiber);
          release t));
  promise

let run t f = if on_worker t then f () else Promise.await (async t f)
let size t = Array.length t.workers

(* Creation and shutdown. *)

let make ~domains =
  let rec t =
    {
      workers =
        Array.init domains (fun i ->
            { deque = Deque.create (); taken = 0; seed = (2 * i) + 1 });
      injection = Injection.create ();
      parking = Parking.create ();
      live = Atomic.make 0;
      stopping = Atomic.make false;
      exited = Atomic.make 0;
      all_exited = Promise.create ();
      joining = Atomic.make false;
      joined = Promise.create ();
      domains = Atomic.make [||];
      failed = Atomic.make [];
      ops =
        {
          Private.Scheduler.enqueue = (fun task -> schedule t task);
          spawn = (fun fiber body -> spawn t fiber body);
        };
    }
  in
  t

let unobserved_failures t =
  Atomic.exchange t.failed []
  |> List.rev
  |> List.filter_map (fun unobserved -> unobserved ())

let shutdown t =
  if on_worker t then
    invalid_arg "Braid_pool.shutdown: called from a task of the same pool";
  if not (Atomic.exchange t.stopping true) then Parking.notify_all t.parking;
  Promise.await t.all_exited;
  if not (Atomic.exchange t.joining true) then (
    Array.iter Domain.join (Atomic.get t.domains);
    Promise.fill t.joined ())
  else Promise.await t.joined;
  match unobserved_failures t with
  | [] -> ()
  | [ (e, bt) ] -> Printexc.raise_with_backtrace e bt
  | several -> raise (Fiber.Multiple several)

let create ~domains () =
  if domains < 1 then invalid_arg "Braid_pool.create: domains < 1";
  let t = make ~domains in
  let recording = Printexc.backtrace_status () in
  let spawned = ref [] in
  match
    Array.iter
      (fun w ->
        spawned :=
          Domain.spawn (fun () ->
              (* Whether backtraces are recorded is a domain's setting: the
                 workers take their creator's, so a task's failure carries
                 one when its submitter's would. *)
              Printexc.record_backtrace recording;
              worker_main t w ())
          :: !spawned)
      t.workers
  with
  | () ->
      Atomic.set t.domains (Array.of_list (List.rev !spawned));
      t
  | exception e ->
      (* Let the workers that did start exit, then report. *)
      let bt = Printexc.get_raw_backtrace () in
      Atomic.set t.stopping true;
      Parking.notify_all t.parking;
      List.iter Domain.join !spawned;
      Printexc.raise_with_backtrace e bt

let with_pool ~domains f =
  let t = create ~domains () in
  match f t with
  | v ->
      shutdown t;
      v
  | exception e ->
      (* [f]'s failure is the one to report. *)
      let bt = Printexc.get_raw_backtrace () in
      (try shutdown t with _ -> ());
      Printexc.raise_with_backtrace e bt

(* Parallel loops: recursive halving into nested async/await, so idle
   workers balance the load by stealing the larger, older halves. *)

let chunk_size_for t chunk_size ~count =
  match chunk_size with
  | Some c when c < 1 -> invalid_arg "Braid_pool: chunk_size < 1"
  | Some c -> c
  | None -> if size t = 1 then count else max 1 (count / (8 * size t))

(* Waits for the other half of a range whose first half failed: by contract
   the loop raises one failure, the first half's, once no body runs any more;
   the other half's outcome is dropped, on purpose, and counts as observed. *)
let await_quietly p = try ignore (Promise.await p) with _ -> ()

let parallel_for t ?chunk_size ~start ~finish body =
  if finish >= start then
    let chunk = chunk_size_for t chunk_size ~count:(finish - start + 1) in
    let rec range lo hi =
      if hi - lo < chunk then
        for i = lo to hi do
          body i
        done
      else
        let mid = lo + ((hi - lo) / 2) in
        let upper = async t (fun () -> range (mid + 1) hi) in
        match range lo mid with
        | () -> Promise.await upper
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            await_quietly upper;
            Printexc.raise_with_backtrace e bt
    in
    run t (fun () -> range start finish)

let parallel_for_reduce t ?chunk_size ~start ~finish ~combine ~init body =
  if finish < start then init
  else
    let chunk = chunk_size_for t chunk_size ~count:(finish - start + 1) in
    let rec range lo hi =
      if hi - lo < chunk then (
        let acc = ref init in
        for i = lo to hi do
          acc := combine !acc (body i)
        done;
        !acc)
      else
        let mid = lo + ((hi - lo) / 2) in
        let upper = async t (fun () -> range (mid + 1) hi) in
        match range lo mid with
        | lower -> combine lower (Promise.await upper)
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            await_quietly upper;
            Printexc.raise_with_backtrace e bt
    in
    run t (fun () -> range start finish)
