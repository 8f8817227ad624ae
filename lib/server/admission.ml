open Braid_web
open Braid_io
module Mutex = Braid_sync.Mutex
module Condition = Braid_sync.Condition

(* Connection slots, server-wide: a slot is taken before [accept] (so two
   loops cannot both take the last one) and given back when the
   connection's fiber ends. *)
type slots = { mutex : Mutex.t; freed : Condition.t; active : int Atomic.t }

(* Connections per client address, over all loops. Taken and given once per
   connection, never held across a suspension: a Stdlib mutex. *)
type clients = {
  lock : Stdlib.Mutex.t;
  counts : (Unix.inet_addr, int) Hashtbl.t;
}

type t = {
  config : Config.t Atomic.t;
  metrics : Metrics.t option;
  slots : slots;
  clients : clients;
}

let create ~config ~metrics =
  {
    config;
    metrics;
    slots =
      {
        mutex = Mutex.create ();
        freed = Condition.create ();
        active = Atomic.make 0;
      };
    clients = { lock = Stdlib.Mutex.create (); counts = Hashtbl.create 64 };
  }

let active t = Atomic.get t.slots.active

(* How long the acceptor at the limit waits for a slot before looking again
   for a connection to close: connections just accepted, or busy, become
   idle without freeing a slot. *)
let look_again = 0.05

(* How long a connection must have waited for a request before it may be
   closed to admit another: a keep-alive connection in use waits only a few
   microseconds between its requests, and a client that holds exactly
   [max_connections] of them must see no reset (nginx closes any "reusable"
   connection, and a client at the limit sees resets). A second is far
   above a client's gap between requests and far below the keep-alive and
   header timeouts, after which the sweeper closes them anyway. *)
let evictable_after = Progress.ns_of_seconds 1.

let try_acquire t =
  let active = t.slots.active in
  let limit = (Atomic.get t.config).max_connections in
  let rec take () =
    let n = Atomic.get active in
    n < limit && (Atomic.compare_and_set active n (n + 1) || take ())
  in
  take ()

let make_room t context =
  let s = t.slots in
  Mutex.lock s.mutex;
  match
    while not (try_acquire t) do
      let now = Services.monotonic_ns () in
      if Connection.evict_idle context ~now ~idle_for:evictable_after then (
        Option.iter Metrics.refused t.metrics;
        Condition.wait s.freed s.mutex)
      else
        ignore
          (Services.timeout look_again (fun () ->
               Condition.wait s.freed s.mutex))
    done
  with
  | () -> Mutex.unlock s.mutex
  | exception e ->
      Mutex.unlock s.mutex;
      raise e

(* The lock orders the decrement before a waiter's check: no lost wake-up. *)
let release t =
  let s = t.slots in
  Atomic.decr s.active;
  Option.iter Metrics.closed t.metrics;
  Fiber.protect (fun () ->
      Mutex.lock s.mutex;
      Condition.broadcast s.freed;
      Mutex.unlock s.mutex)

let await_none t =
  let s = t.slots in
  Mutex.lock s.mutex;
  Fun.protect
    ~finally:(fun () -> Mutex.unlock s.mutex)
    (fun () ->
      while Atomic.get s.active > 0 do
        Condition.wait s.freed s.mutex
      done)

(* An address is its own key: no text made per connection. *)
let client_of = function
  | Unix.ADDR_INET (ip, _) -> Some ip
  | Unix.ADDR_UNIX _ -> None

let admit_client t peer =
  match
    ( Config.client_cap (Atomic.get t.config).max_connections_per_client peer,
      client_of peer )
  with
  | None, _ | _, None -> true
  | Some cap, Some client ->
      Stdlib.Mutex.protect t.clients.lock (fun () ->
          let n =
            Option.value ~default:0 (Hashtbl.find_opt t.clients.counts client)
          in
          if n >= cap then false
          else (
            Hashtbl.replace t.clients.counts client (n + 1);
            true))

let leave_client t peer =
  match client_of peer with
  | None -> ()
  | Some client ->
      Stdlib.Mutex.protect t.clients.lock (fun () ->
          match Hashtbl.find_opt t.clients.counts client with
          | Some n when n > 1 -> Hashtbl.replace t.clients.counts client (n - 1)
          | Some _ -> Hashtbl.remove t.clients.counts client
          | None -> ())

let ended t peer =
  leave_client t peer;
  release t

let too_many_from_client =
  Framing.refusal ~status:"503 Service Unavailable"
    "too many connections from you"

let refuse t socket ~slot =
  Option.iter Metrics.refused t.metrics;
  Fun.protect
    ~finally:(fun () ->
      Connection.close_quietly socket;
      if slot then release t else Option.iter Metrics.closed t.metrics)
    (fun () ->
      try Net.write_string socket too_many_from_client
      with Braid_io.Io_error _ -> ())
