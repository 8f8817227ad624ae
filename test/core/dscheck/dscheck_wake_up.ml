(* Every interleaving of lib/core/wake_up.ml's protocol between producers
   on some threads and the sleeper on another, with each kind of sleeper
   the schedulers use: a condition variable (Wake_up.Monitor, Braid_fifo's)
   and an eventfd-like counter that epoll waits on (Braid_io's loop, whose
   wait also ends for timers and descriptors). Work is a counter: publishing
   is an increment, the sleeper takes all of it at once. A lost wake-up
   leaves the sleeper blocked for ever with work published, so it never
   takes all of it, which the final checks see. *)

let run name scenario =
  let runs = ref 0 in
  Atomic.trace (fun () ->
      incr runs;
      Sim.reset ();
      scenario ());
  Printf.printf "%s: every interleaving checked (%d runs)\n%!" name !runs

(* The FIFO scheduler's sleeper: it blocks on a monitor until work is
   published. *)
module On_monitor = struct
  type t = {
    flag : Wake_up.flag;
    work : int Atomic.t;
    monitor : Wake_up.Monitor.t;
    mutable wakes : int;  (** Calls of [wake]: at most one per sleep. *)
    mutable sleeps : int;  (** Calls of [Wake.sleep]. *)
  }

  type timeout = unit
  type outcome = unit

  let create () =
    {
      flag = Wake_up.flag ();
      work = Atomic.make 0;
      monitor = Wake_up.Monitor.create ();
      wakes = 0;
      sleeps = 0;
    }

  let flag t = t.flag
  let has_work t = Atomic.get t.work > 0
  let block t () = Wake_up.Monitor.wait t.monitor
  let poll _ = ()

  let wake t =
    t.wakes <- t.wakes + 1;
    Wake_up.Monitor.signal t.monitor
end

(* The IO loop's sleeper: epoll_wait on a set holding an eventfd. A write
   to the eventfd before the wait ends the wait at once; the wait also ends
   for other reasons ([interrupt]: a timer or a descriptor), which write
   nothing. *)
module On_eventfd = struct
  type eventfd =
    | Count of int  (** Writes not yet read; nobody is waiting. *)
    | Waiting of (unit -> unit)  (** The sleeper waits; this ends its wait. *)

  type t = {
    flag : Wake_up.flag;
    work : int Atomic.t;
    eventfd : eventfd Atomic.t;
    mutable wakes : int;
    mutable sleeps : int;
  }

  type timeout = unit
  type outcome = unit

  let create () =
    {
      flag = Wake_up.flag ();
      work = Atomic.make 0;
      eventfd = Atomic.make (Count 0);
      wakes = 0;
      sleeps = 0;
    }

  let flag t = t.flag
  let has_work t = Atomic.get t.work > 0

  (* Returns at once if the eventfd was written (and reads it, as the
     loop's dispatch does), else waits for a write or an interrupt. *)
  let rec block t () =
    match Atomic.get t.eventfd with
    | Count n as seen when n > 0 ->
        if not (Atomic.compare_and_set t.eventfd seen (Count 0)) then block t ()
    | Count _ as seen ->
        if
          not
            (Sim.block (fun wake ->
                 Atomic.compare_and_set t.eventfd seen (Waiting wake)))
        then block t ()
    | Waiting _ -> invalid_arg "two sleepers"

  let poll _ = ()

  (* Ends a wait in progress; with nobody waiting, [write] is kept and
     [interrupt] is forgotten, like a timeout that has nobody to end. *)
  let rec signal t ~write =
    match Atomic.get t.eventfd with
    | Count n as seen ->
        if write && not (Atomic.compare_and_set t.eventfd seen (Count (n + 1)))
        then signal t ~write
    | Waiting wake as seen ->
        if Atomic.compare_and_set t.eventfd seen (Count 0) then wake ()
        else signal t ~write

  let wake t =
    t.wakes <- t.wakes + 1;
    signal t ~write:true

  let interrupt t = signal t ~write:false
end

module type Model = sig
  include Wake_up.Sleeper with type timeout = unit and type outcome = unit

  val create : unit -> t
  val work : t -> int Atomic.t
  val sleeps : t -> int
  val count_sleep : t -> unit
  val wakes : t -> int
end

module Scenarios (M : Model) = struct
  module Wake = Wake_up.Make (M)

  (* A scheduler's loop, down to its wake-up: take the work published, sleep
     when there is none, until [expected] items were taken. *)
  let sleeper s ~expected =
    let rec loop taken =
      if taken >= expected then taken
      else
        match Atomic.exchange (M.work s) 0 with
        | 0 ->
            M.count_sleep s;
            Wake.sleep s ();
            loop taken
        | n -> loop (taken + n)
    in
    loop 0

  let publish s =
    Atomic.incr (M.work s);
    Wake.notify s

  (* The sleeper took everything (it is not blocked with work published),
     and no sleep was woken twice. *)
  let check s taken ~expected =
    Atomic.final (fun () ->
        Atomic.check (fun () ->
            !taken = Some expected
            && Atomic.get (M.work s) = 0
            && M.wakes s <= M.sleeps s))

  let producers n () =
    let s = M.create () in
    let taken = Sim.spawn (fun () -> sleeper s ~expected:n) in
    for _ = 1 to n do
      ignore (Sim.spawn (fun () -> publish s))
    done;
    check s taken ~expected:n
end

module Monitor_scenarios = Scenarios (struct
  include On_monitor

  let work t = t.work
  let sleeps t = t.sleeps
  let count_sleep t = t.sleeps <- t.sleeps + 1
  let wakes t = t.wakes
end)

module Eventfd_model = struct
  include On_eventfd

  let work t = t.work
  let sleeps t = t.sleeps
  let count_sleep t = t.sleeps <- t.sleeps + 1
  let wakes t = t.wakes
end

module Eventfd_scenarios = Scenarios (Eventfd_model)

(* The sleeper's wait ends for a reason of its own (a timer, a descriptor)
   at any point: it finds no work, or not all of it, and sleeps again; a
   producer's wake-up may then land in the earlier sleep, or in none. With
   one producer publishing twice (two wake-ups), or two publishing once. *)
let interrupted ~producers ~items () =
  let s = Eventfd_model.create () in
  let expected = producers * items in
  let taken = Sim.spawn (fun () -> Eventfd_scenarios.sleeper s ~expected) in
  for _ = 1 to producers do
    ignore
      (Sim.spawn (fun () ->
           for _ = 1 to items do
             Eventfd_scenarios.publish s
           done))
  done;
  ignore (Sim.spawn (fun () -> Eventfd_model.interrupt s));
  Eventfd_scenarios.check s taken ~expected

let () =
  run "monitor, one producer" (Monitor_scenarios.producers 1);
  run "monitor, two producers" (Monitor_scenarios.producers 2);
  run "eventfd, one producer" (Eventfd_scenarios.producers 1);
  run "eventfd, two producers" (Eventfd_scenarios.producers 2);
  run "eventfd, interrupted sleep, one producer, two items"
    (interrupted ~producers:1 ~items:2);
  run "eventfd, interrupted sleep, two producers"
    (interrupted ~producers:2 ~items:1)
