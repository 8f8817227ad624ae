(* Mutex and Condition unqualified: the model check in test/core/dscheck
   compiles this file with simulated ones in their place. *)

type flag = bool Atomic.t

let flag () = Atomic.make false

module type Sleeper = sig
  type t
  type timeout
  type outcome

  val flag : t -> flag
  val has_work : t -> bool
  val block : t -> timeout -> outcome
  val poll : t -> outcome
  val wake : t -> unit
end

module Make (S : Sleeper) = struct
  (* The producer's half: its work is published (an atomic write), then the
     flag is read. Reading before exchanging keeps the common case (the
     sleeper awake) to one read of a line every producer can share. The
     exchange elects one waker per sleep. *)
  let notify s =
    let flag = S.flag s in
    if Atomic.get flag && Atomic.exchange flag false then S.wake s

  (* The sleeper's half: the flag is set, then the work looked for. A producer
     that cleared the flag before [block] started has made its [wake] (or is
     making it); [block] must not miss it (see the Sleeper contract). The flag
     is cleared on every way out, so that producers stop waking a sleeper
     that is awake. *)
  let sleep s timeout =
    let flag = S.flag s in
    Atomic.set flag true;
    if S.has_work s then (
      Atomic.set flag false;
      S.poll s)
    else
      match S.block s timeout with
      | outcome ->
          Atomic.set flag false;
          outcome
      | exception e ->
          Atomic.set flag false;
          raise e
end

module Monitor = struct
  type t = {
    lock : Mutex.t;
    changed : Condition.t;
    mutable signalled : bool;  (** Under [lock]. *)
  }

  let create () =
    { lock = Mutex.create (); changed = Condition.create (); signalled = false }

  let wait m =
    Mutex.lock m.lock;
    while not m.signalled do
      Condition.wait m.changed m.lock
    done;
    m.signalled <- false;
    Mutex.unlock m.lock

  let signal m =
    Mutex.lock m.lock;
    m.signalled <- true;
    Condition.signal m.changed;
    Mutex.unlock m.lock
end
