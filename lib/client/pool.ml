type origin_pool = {
  permits : Braid_sync.Semaphore.t;
  idle : Connection.t Stack.t;
      (** Most recently used on top: the one least likely to have been timed out
          by the server. *)
}

(* One loop's pools: touched only on its domain, by one fiber at a time. *)
type loop_pools = {
  domain : int;
  origins : (string, origin_pool) Hashtbl.t;
  buffers : bytes Stack.t;
      (** Body buffers given back, for the next body: one of this size allocated
          per response would be a major-heap allocation each time, and the
          collector's work that grows with them. *)
}

type t = {
  max_active : int;
  max_idle : int;
  idle_timeout_ns : int;
  lock : Mutex.t;  (** Guards [loops], never held across a suspension. *)
  mutable loops : loop_pools list;
}

type lease = {
  domain : int;
  loop : loop_pools;
  pool : origin_pool;
  released : bool Atomic.t;
  max_idle : int;
  idle_timeout_ns : int;
}

let create ~max_active ~max_idle ~idle_timeout =
  if max_active < 1 then invalid_arg "Braid_client: max_connections < 1";
  {
    max_active;
    max_idle = max 0 max_idle;
    idle_timeout_ns = Float.to_int (idle_timeout *. 1e9);
    lock = Mutex.create ();
    loops = [];
  }

let loop_pools t =
  let domain = (Domain.self () :> int) in
  Mutex.protect t.lock (fun () ->
      match
        List.find_opt (fun (l : loop_pools) -> l.domain = domain) t.loops
      with
      | Some l -> l
      | None ->
          let l =
            { domain; origins = Hashtbl.create 8; buffers = Stack.create () }
          in
          t.loops <- l :: t.loops;
          l)

let acquire t origin =
  let loop = loop_pools t in
  let pool =
    match Hashtbl.find_opt loop.origins origin with
    | Some p -> p
    | None ->
        let p =
          {
            permits = Braid_sync.Semaphore.make t.max_active;
            idle = Stack.create ();
          }
        in
        Hashtbl.replace loop.origins origin p;
        p
  in
  Braid_sync.Semaphore.acquire pool.permits;
  {
    domain = loop.domain;
    loop;
    pool;
    released = Atomic.make false;
    max_idle = t.max_idle;
    idle_timeout_ns = t.idle_timeout_ns;
  }

let checkout lease =
  let now = Braid_io.Time.now_ns () in
  let rec next () =
    match Stack.pop_opt lease.pool.idle with
    | None -> None
    | Some c ->
        if
          now - Connection.idle_since c <= lease.idle_timeout_ns
          && Connection.looks_reusable c
        then Some c
        else (
          Connection.close c;
          next ())
  in
  next ()

let release lease connection =
  if not (Atomic.exchange lease.released true) then (
    (match connection with
    | None -> ()
    | Some c ->
        if
          (Domain.self () :> int) = lease.domain
          && Connection.is_open c
          && Stack.length lease.pool.idle < lease.max_idle
        then (
          Connection.set_idle_since c (Braid_io.Time.now_ns ());
          Stack.push c lease.pool.idle)
        else Connection.close c);
    Braid_sync.Semaphore.release lease.pool.permits)

let buffer_size = 65536

(* As many as there may be bodies in flight on the loop, no more. *)
let max_buffers = 64

let take_buffer lease =
  match Stack.pop_opt lease.loop.buffers with
  | Some b -> b
  | None -> Bytes.create buffer_size

let give_buffer lease b =
  if
    (Domain.self () :> int) = lease.domain
    && Stack.length lease.loop.buffers < max_buffers
  then Stack.push b lease.loop.buffers

let close_idle t =
  let loop = loop_pools t in
  Hashtbl.iter
    (fun _ p ->
      Stack.iter Connection.close p.idle;
      Stack.clear p.idle)
    loop.origins
