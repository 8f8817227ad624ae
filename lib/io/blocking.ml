type job =
  | Job : {
      call : unit -> 'a;
      dispose : 'a -> unit;
      resumer : 'a Braid.resumer;
      abandoned : bool Atomic.t;
          (** Set by the caller once it raised [Cancelled]: the call need not
              start. *)
    }
      -> job

type stats = { threads : int; busy : int; queued : int }

(* Everything mutable is guarded by [lock]. *)
type t = {
  lock : Mutex.t;
  job_queued : Condition.t;  (** Wakes idle workers. *)
  threads_wanted : Condition.t;  (** Wakes the host, which starts threads. *)
  queue : job Queue.t;
  max_threads : int;
  mutable threads : int;  (** Started or asked of the host. *)
  mutable to_start : int;  (** Asked of the host, not yet started. *)
  mutable idle : int;  (** Workers waiting on [job_queued]. *)
  mutable busy : int;
  mutable stopping : bool;
  mutable host : unit Domain.t option;
}

let create ?(max_threads = 16) () =
  if max_threads < 1 then invalid_arg "Blocking.create: max_threads < 1";
  {
    lock = Mutex.create ();
    job_queued = Condition.create ();
    threads_wanted = Condition.create ();
    queue = Queue.create ();
    max_threads;
    threads = 0;
    to_start = 0;
    idle = 0;
    busy = 0;
    stopping = false;
    host = None;
  }

let execute (Job { call; dispose; resumer; abandoned }) =
  if not (Atomic.get abandoned) then
    match call () with
    | value -> (
        if not (resumer (Ok value)) then
          try dispose value
          with _ ->
            (* Nobody wanted the result and this thread has no one to report
               to: disposal is best effort (see the interface). *)
            ())
    | exception error -> ignore (resumer (Error error) : bool)

(* A worker takes jobs until the pool stops and its queue is empty. *)
let rec work t =
  Mutex.lock t.lock;
  while Queue.is_empty t.queue && not t.stopping do
    t.idle <- t.idle + 1;
    Condition.wait t.job_queued t.lock;
    t.idle <- t.idle - 1
  done;
  match Queue.take_opt t.queue with
  | None -> Mutex.unlock t.lock
  | Some job ->
      t.busy <- t.busy + 1;
      Mutex.unlock t.lock;
      (match execute job with
      | () -> ()
      | exception _ ->
          (* Only a resumer or the runtime can raise here (execute catches
             the call's and dispose's own): the thread must survive it, or
             the pool would lose it for good. *)
          ());
      Mutex.lock t.lock;
      t.busy <- t.busy - 1;
      Mutex.unlock t.lock;
      work t

(* With no thread at all, the queued calls would wait forever: fail them. *)
let fail_queue_if_threadless t error =
  if t.threads = 0 then (
    let failed = Queue.copy t.queue in
    Queue.clear t.queue;
    Queue.iter
      (fun (Job { resumer; _ }) -> ignore (resumer (Error error) : bool))
      failed)

(* The host domain starts the pool's threads, so that they belong to it and
   never take an event loop's runtime lock; it joins them on shutdown. *)
let host t () =
  let started = ref [] in
  Mutex.lock t.lock;
  let rec serve () =
    if t.to_start > 0 then (
      let n = t.to_start in
      t.to_start <- 0;
      Mutex.unlock t.lock;
      let failures = ref [] in
      for _ = 1 to n do
        match Thread.create work t with
        | thread -> started := thread :: !started
        | exception error -> failures := error :: !failures
      done;
      Mutex.lock t.lock;
      List.iter
        (fun error ->
          t.threads <- t.threads - 1;
          fail_queue_if_threadless t error)
        !failures;
      serve ())
    else if not t.stopping then (
      Condition.wait t.threads_wanted t.lock;
      serve ())
  in
  serve ();
  Mutex.unlock t.lock;
  List.iter Thread.join !started

let submit t job =
  Mutex.lock t.lock;
  match
    if t.stopping then invalid_arg "Blocking.run: the pool was shut down";
    Queue.push job t.queue;
    if t.idle >= Queue.length t.queue then Condition.signal t.job_queued
    else if t.threads < t.max_threads then (
      t.threads <- t.threads + 1;
      t.to_start <- t.to_start + 1;
      match t.host with
      | Some _ -> Condition.signal t.threads_wanted
      | None -> (
          let recording = Printexc.backtrace_status () in
          match
            Domain.spawn (fun () ->
                (* A domain's own setting: calls that fail on the pool carry
                   a backtrace when their caller's would. *)
                Printexc.record_backtrace recording;
                (* Its threads inherit this mask: a write to a vanished
                   peer or reader from a pool call fails with EPIPE, whichever
                   thread started the pool, as it does on a loop. *)
                ignore (Syscall.block_sigpipe () : bool);
                host t ())
          with
          | domain -> t.host <- Some domain
          | exception error ->
              (* No host, so no thread either: the queue holds only this
                 call, which fails with the caller's [suspend]. *)
              t.threads <- 0;
              t.to_start <- 0;
              Queue.clear t.queue;
              raise error))
  with
  | () -> Mutex.unlock t.lock
  | exception error ->
      Mutex.unlock t.lock;
      raise error

let shared_pool = Lazy.from_fun (fun () -> create ())

(* The process's pool is a global like libuv's: calls made by code that was
   handed no pool (a library deep below [Braid_io.run]) still need one, and
   [with_pool] passes another where it matters. [Lazy.force] from two domains
   at once is a race (Lazy.Undefined), hence the mutex. *)
let shared_lock = Mutex.create ()

let shared () =
  if Lazy.is_val shared_pool then Lazy.force shared_pool
  else Mutex.protect shared_lock (fun () -> Lazy.force shared_pool)

let key : t Braid.Fiber.key = Braid.Fiber.create_key ~name:"blocking pool" ()
let with_pool t f = Braid.Fiber.with_binding key t f

let current () =
  match Braid.Fiber.get key with Some t -> t | None -> shared ()

let run ?pool ?(dispose = ignore) call =
  let t = match pool with Some t -> t | None -> current () in
  let abandoned = Atomic.make false in
  (* The call's exception travels as a value, with the backtrace of where it
     was raised on the pool's thread. *)
  let call () =
    match call () with
    | value -> Ok value
    | exception error -> Error (error, Printexc.get_raw_backtrace ())
  in
  let dispose = function Ok value -> dispose value | Error _ -> () in
  match
    Braid.suspend (fun resumer ->
        submit t (Job { call; dispose; resumer; abandoned });
        None)
  with
  | Ok value -> value
  | Error (error, backtrace) -> Printexc.raise_with_backtrace error backtrace
  | exception Braid.Cancelled ->
      let backtrace = Printexc.get_raw_backtrace () in
      Atomic.set abandoned true;
      Printexc.raise_with_backtrace Braid.Cancelled backtrace

let stats t =
  Mutex.protect t.lock (fun () ->
      {
        threads = t.threads - t.to_start;
        busy = t.busy;
        queued = Queue.length t.queue;
      })

let shutdown t =
  let host =
    Mutex.protect t.lock (fun () ->
        t.stopping <- true;
        Condition.broadcast t.job_queued;
        Condition.signal t.threads_wanted;
        let host = t.host in
        t.host <- None;
        host)
  in
  Option.iter Domain.join host;
  Mutex.protect t.lock (fun () -> t.threads <- 0)
