type t = {
  lock : Mutex.t;
  wake_up : Condition.t;
  sleepers : int Atomic.t;
      (** Workers inside [park]. Changed only under [lock], so a notifier
          holding [lock] sees exactly the workers that are waiting (or that were
          signalled and will poll again). *)
  searching : int Atomic.t;
      (** Workers spinning in search of work: they will find new work without
          being woken. *)
  waking : bool Atomic.t;
      (** A signal is on its way: a sleeper will poll after it, so further
          notifications are redundant until it has. Saves a lock and a futex
          call on every push while a worker wakes up. *)
}

let create () =
  {
    lock = Mutex.create ();
    wake_up = Condition.create ();
    sleepers = Atomic.make 0;
    searching = Atomic.make 0;
    waking = Atomic.make false;
  }

let notify t =
  if
    Atomic.get t.searching = 0
    && Atomic.get t.sleepers > 0
    && Atomic.compare_and_set t.waking false true
  then (
    Mutex.lock t.lock;
    (* Every counted sleeper is in [Condition.wait] or about to poll again,
       so the signal cannot be lost. With none left, nobody would clear
       [waking]: clear it ourselves. *)
    if Atomic.get t.sleepers > 0 then Condition.signal t.wake_up
    else Atomic.set t.waking false;
    Mutex.unlock t.lock)

let try_search t =
  Atomic.get t.searching = 0 && Atomic.compare_and_set t.searching 0 1

let stop_searching t = Atomic.decr t.searching

let notify_all t =
  Mutex.lock t.lock;
  Condition.broadcast t.wake_up;
  Mutex.unlock t.lock

let park t poll =
  Mutex.lock t.lock;
  Atomic.incr t.sleepers;
  let found =
    match poll () with
    | Some _ as found -> found
    | None ->
        Condition.wait t.wake_up t.lock;
        Atomic.set t.waking false;
        None
    | exception e ->
        Atomic.decr t.sleepers;
        Mutex.unlock t.lock;
        raise e
  in
  Atomic.decr t.sleepers;
  Mutex.unlock t.lock;
  found
