(* Permits bound the connections: a caller holds one from before it takes or
   opens a connection until after it gave it back or closed it, so open
   connections never outnumber [max_size]. The idle connections are a stack:
   the most recently used is reused first (its server process is warm, its
   statements prepared), and the others age out after [max_idle]. All fields
   are touched only by fibers of one loop, which never preempts them between
   two blocking calls: no lock is needed. *)

type stats = { open_connections : int; idle : int; waiting : int }
type 'c idle = { connection : 'c; since_ns : int }

type 'c t = {
  connect : unit -> ('c, Error.t) result;
  close : 'c -> unit;
  is_usable : 'c -> bool;
  wait_timeout : float;
  max_idle_ns : int;
  permits : Braid_sync.Semaphore.t;
  owner : Domain.id;
  mutable idle : 'c idle list;
  mutable open_connections : int;
  mutable waiting : int;
  mutable closed : bool;
}

let check_owner t =
  if Domain.self () <> t.owner then
    invalid_arg "Braid_db: a pool is used from another domain than its own"

let close_connection t c =
  t.open_connections <- t.open_connections - 1;
  (* Closing must finish even in a cancelled fiber: the connection is
     already counted out. *)
  Braid.Fiber.protect (fun () -> t.close c)

let shut_down t =
  t.closed <- true;
  let idle = t.idle in
  t.idle <- [];
  List.iter (fun { connection; _ } -> close_connection t connection) idle

let create ~sw ~max_size ~wait_timeout ~max_idle ~connect ~close ~is_usable =
  if max_size < 1 then invalid_arg "Braid_db: max_size < 1";
  if not (wait_timeout >= 0.) then invalid_arg "Braid_db: wait_timeout";
  if not (max_idle >= 0.) then invalid_arg "Braid_db: max_idle";
  let t =
    {
      connect;
      close;
      is_usable;
      wait_timeout;
      max_idle_ns = int_of_float (Float.min max_idle 1e9 *. 1e9);
      permits = Braid_sync.Semaphore.make max_size;
      owner = Domain.self ();
      idle = [];
      open_connections = 0;
      waiting = 0;
      closed = false;
    }
  in
  Braid.Switch.on_release sw (fun () -> shut_down t);
  t

let acquire_permit t =
  if Braid_sync.Semaphore.try_acquire t.permits then true
  else (
    t.waiting <- t.waiting + 1;
    Fun.protect
      ~finally:(fun () -> t.waiting <- t.waiting - 1)
      (fun () ->
        Braid_io.Time.timeout t.wait_timeout (fun () ->
            Braid_sync.Semaphore.acquire t.permits)
        = Some ()))

(* An idle connection is reused if it has not idled too long and its driver
   finds nothing wrong with it (a server that restarted meanwhile closed it). *)
let rec take_idle t =
  match t.idle with
  | [] -> None
  | { connection; since_ns } :: rest ->
      t.idle <- rest;
      if
        Braid_io.Time.now_ns () - since_ns <= t.max_idle_ns
        && t.is_usable connection
      then Some connection
      else (
        close_connection t connection;
        take_idle t)

let take t =
  match take_idle t with
  | Some c -> Ok c
  | None -> (
      match t.connect () with
      | Ok c ->
          t.open_connections <- t.open_connections + 1;
          Ok c
      | Error _ as e -> e)

let give_back t c =
  if t.closed || not (t.is_usable c) then close_connection t c
  else
    t.idle <- { connection = c; since_ns = Braid_io.Time.now_ns () } :: t.idle

let use t f =
  check_owner t;
  if t.closed then Error Error.Pool_closed
  else if not (acquire_permit t) then Error (Error.Wait_timeout t.wait_timeout)
  else
    match take t with
    | exception e ->
        Braid_sync.Semaphore.release t.permits;
        raise e
    | Error _ as e ->
        Braid_sync.Semaphore.release t.permits;
        e
    | Ok c -> (
        match f c with
        | result ->
            give_back t c;
            Braid_sync.Semaphore.release t.permits;
            result
        | exception e ->
            let bt = Printexc.get_raw_backtrace () in
            give_back t c;
            Braid_sync.Semaphore.release t.permits;
            Printexc.raise_with_backtrace e bt)

let stats t =
  {
    open_connections = t.open_connections;
    idle = List.length t.idle;
    waiting = t.waiting;
  }
