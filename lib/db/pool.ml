(* A pool is one share per event loop that used it: a connection may hold a
   descriptor registered with one loop's epoll (libpq's socket), so it never
   leaves the loop that opened it, and each share is touched only by fibers
   of its loop, which never preempt one another between two blocking calls:
   no lock on the path of [use]. The loops find their share in a list that
   grows by one the first time a loop uses the pool (compare-and-set), and
   shrinks when that share is wound down.

   Within a share, permits bound the connections: a caller holds one from
   before it takes or opens a connection until after it gave it back or
   closed it, so a share's open connections never outnumber [max_size]. The
   idle connections are a stack: the most recently used is reused first (its
   server process is warm, its statements prepared), and the others age out
   after [max_idle].

   The creating loop's share opens its connections on the pool's switch and
   is shut down by that switch's release, at once. Another loop's share has
   a keeper there, a daemon fiber ({!Braid_io.fork_daemon}) whose switch its
   connections are opened on: the keeper shuts the share down when the
   pool's switch finishes (the [closing] promise wakes it, on its own loop)
   or when its loop has nothing else to run (the loop cancels it). *)

type stats = { open_connections : int; idle : int; waiting : int }
type 'c idle = { connection : 'c; since_ns : int }

type 'c share = {
  loop : Braid_io.loop;
  permits : Braid_sync.Semaphore.t;
  mutable switch : Braid.Switch.t option;
      (** What this share's connections are opened on: the pool's switch for the
          creating loop, the keeper's on another, once it has started. *)
  started : unit Braid_sync.Promise.t;  (** Filled once [switch] is set. *)
  mutable idle : 'c idle list;
  mutable open_connections : int;
  mutable waiting : int;
  mutable closed : bool;
}

type 'c t = {
  connect : sw:Braid.Switch.t -> ('c, Error.t) result;
  close : 'c -> unit;
  is_usable : 'c -> bool;
  max_size : int;
  wait_timeout : float;
  max_idle_ns : int;
  released : bool Atomic.t;  (** The pool's switch has finished. *)
  closing : unit Braid_sync.Promise.t;
      (** Filled when the pool's switch finishes: wakes the keepers. *)
  home : 'c share option;
      (** The creating loop's, when the pool has a switch: its connections are
          opened on that switch. Without one, every loop's share has a keeper.
      *)
  others : 'c share list Atomic.t;
}

let make_share loop ~max_size ~switch =
  let started = Braid_sync.Promise.create () in
  if Option.is_some switch then Braid_sync.Promise.fill started ();
  {
    loop;
    permits = Braid_sync.Semaphore.make max_size;
    switch;
    started;
    idle = [];
    open_connections = 0;
    waiting = 0;
    closed = false;
  }

let close_connection t share c =
  share.open_connections <- share.open_connections - 1;
  (* Closing must finish even in a cancelled fiber: the connection is
     already counted out. *)
  Braid.Fiber.protect (fun () -> t.close c)

(* On [share]'s loop. *)
let shut_down t share =
  if not share.closed then (
    share.closed <- true;
    let idle = share.idle in
    share.idle <- [];
    List.iter
      (fun { connection; _ } -> close_connection t share connection)
      idle)

let create ?sw ~max_size ~wait_timeout ~max_idle ~connect ~close ~is_usable () =
  if max_size < 1 then invalid_arg "Braid_db: max_size < 1";
  if not (wait_timeout >= 0.) then invalid_arg "Braid_db: wait_timeout";
  if not (max_idle >= 0.) then invalid_arg "Braid_db: max_idle";
  let home =
    Option.map
      (fun sw ->
        match Braid_io.current_loop () with
        | loop -> make_share loop ~max_size ~switch:(Some sw)
        | exception Invalid_argument _ ->
            invalid_arg
              "Braid_db: a pool with a switch is made from a fiber of \
               Braid_io.run")
      sw
  in
  let t =
    {
      connect;
      close;
      is_usable;
      max_size;
      wait_timeout;
      max_idle_ns = int_of_float (Float.min max_idle 1e9 *. 1e9);
      released = Atomic.make false;
      closing = Braid_sync.Promise.create ();
      home;
      others = Atomic.make [];
    }
  in
  Option.iter
    (fun sw ->
      Braid.Switch.on_release sw (fun () ->
          Atomic.set t.released true;
          Option.iter (shut_down t) t.home;
          Braid_sync.Promise.fill t.closing ()))
    sw;
  t

(* {1 The shares of other loops} *)

let rec remove_share t share =
  let shares = Atomic.get t.others in
  let rest = List.filter (fun s -> s != share) shares in
  if not (Atomic.compare_and_set t.others shares rest) then remove_share t share

(* The keeper of [share], a daemon of its loop. Its switch holds the share's
   connections: before it finishes, the share is shut down and, when the
   pool closed, every caller has given its connection back (taking all the
   permits waits for that). At the loop's end no caller is left: only
   daemons run then. *)
let keep t share () =
  Fun.protect ~finally:(fun () -> remove_share t share) @@ fun () ->
  Braid.Switch.run @@ fun sw ->
  share.switch <- Some sw;
  Braid_sync.Promise.fill share.started ();
  Fun.protect ~finally:(fun () -> shut_down t share) @@ fun () ->
  Braid_sync.Promise.await t.closing;
  shut_down t share;
  for _ = 1 to t.max_size do
    Braid_sync.Semaphore.acquire share.permits
  done

let rec add_share t loop =
  let shares = Atomic.get t.others in
  let share = make_share loop ~max_size:t.max_size ~switch:None in
  if Atomic.compare_and_set t.others shares (share :: shares) then (
    Braid_io.fork_daemon (keep t share);
    share)
  else add_share t loop

(* Only this loop's fibers add its share, and none runs between this search
   and the addition: a loop never gets two. *)
let rec find_share t loop = function
  | [] -> add_share t loop
  | share :: rest ->
      if share.loop == loop then share else find_share t loop rest

let share_here t =
  let loop = Braid_io.current_loop () in
  match t.home with
  | Some home when home.loop == loop -> home
  | Some _ | None -> find_share t loop (Atomic.get t.others)

(* {1 Lending} *)

let acquire_permit t share =
  if Braid_sync.Semaphore.try_acquire share.permits then true
  else (
    share.waiting <- share.waiting + 1;
    Fun.protect
      ~finally:(fun () -> share.waiting <- share.waiting - 1)
      (fun () ->
        Braid_io.Time.timeout t.wait_timeout (fun () ->
            Braid_sync.Semaphore.acquire share.permits)
        = Some ()))

(* An idle connection is reused if it has not idled too long and its driver
   finds nothing wrong with it (a server that restarted meanwhile closed it). *)
let rec take_idle t share =
  match share.idle with
  | [] -> None
  | { connection; since_ns } :: rest ->
      share.idle <- rest;
      if
        Braid_io.Time.now_ns () - since_ns <= t.max_idle_ns
        && t.is_usable connection
      then Some connection
      else (
        close_connection t share connection;
        take_idle t share)

let switch_of share =
  match share.switch with
  | Some sw -> sw
  | None ->
      (* The first caller on this loop: the keeper starts at the loop's
         next turn. *)
      Braid_sync.Promise.await share.started;
      Option.get share.switch

let take t share =
  match take_idle t share with
  | Some c -> Ok c
  | None -> (
      let sw = switch_of share in
      if share.closed then Error Error.Pool_closed
      else
        match t.connect ~sw with
        | Ok c ->
            share.open_connections <- share.open_connections + 1;
            Ok c
        | Error _ as e -> e)

let give_back t share c =
  if share.closed || Atomic.get t.released || not (t.is_usable c) then
    close_connection t share c
  else
    share.idle <-
      { connection = c; since_ns = Braid_io.Time.now_ns () } :: share.idle

let use t f =
  if Atomic.get t.released then Error Error.Pool_closed
  else
    let share = share_here t in
    if share.closed then Error Error.Pool_closed
    else if not (acquire_permit t share) then
      Error (Error.Wait_timeout t.wait_timeout)
    else
      match take t share with
      | exception e ->
          Braid_sync.Semaphore.release share.permits;
          raise e
      | Error _ as e ->
          Braid_sync.Semaphore.release share.permits;
          e
      | Ok c -> (
          match f c with
          | result ->
              give_back t share c;
              Braid_sync.Semaphore.release share.permits;
              result
          | exception e ->
              let bt = Printexc.get_raw_backtrace () in
              give_back t share c;
              Braid_sync.Semaphore.release share.permits;
              Printexc.raise_with_backtrace e bt)

(* Other loops' counts are read while those loops run: each is a value it
   had, not necessarily all at the same instant. *)
let stats t =
  List.fold_left
    (fun (acc : stats) share ->
      {
        open_connections = acc.open_connections + share.open_connections;
        idle = acc.idle + List.length share.idle;
        waiting = acc.waiting + share.waiting;
      })
    { open_connections = 0; idle = 0; waiting = 0 }
    (Option.to_list t.home @ Atomic.get t.others)
