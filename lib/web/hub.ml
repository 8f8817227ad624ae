module Channel = Braid_sync.Channel

type ended = Unsubscribed | Too_slow

type 'a subscription = {
  queue : 'a Channel.t;
  ended : ended option Atomic.t;
      (** Set once, by whoever ends the subscription first. *)
  receiving : bool Atomic.t;
  on_overflow : unit -> unit;
  hub : 'a t;
}

and 'a t = {
  capacity : int;
  members : 'a subscription list Atomic.t;
      (** Replaced whole on every change, so a publisher walks a snapshot
          without a lock. *)
}

let create ?(capacity = 256) () =
  if capacity < 1 then invalid_arg "Hub.create: capacity < 1";
  { capacity; members = Atomic.make [] }

let rec change members f =
  let old = Atomic.get members in
  if not (Atomic.compare_and_set members old (f old)) then change members f

(* The first caller to set [why] ends the subscription: it leaves the hub, and
   closing its queue wakes a receiver blocked on it. *)
let finish s why =
  if Atomic.compare_and_set s.ended None (Some why) then (
    change s.hub.members (List.filter (fun m -> m != s));
    Channel.close s.queue;
    true)
  else false

let unsubscribe s = ignore (finish s Unsubscribed : bool)

let subscribe ?(on_overflow = ignore) hub =
  let s =
    {
      queue = Channel.create hub.capacity;
      ended = Atomic.make None;
      receiving = Atomic.make false;
      on_overflow;
      hub;
    }
  in
  change hub.members (fun ms -> s :: ms);
  s

let publish hub m =
  List.iter
    (fun s ->
      match Channel.try_send s.queue m with
      | true -> ()
      | false -> if finish s Too_slow then s.on_overflow ()
      (* Ended since the snapshot was taken: it wants nothing more. *)
      | exception Channel.Closed -> ())
    (Atomic.get hub.members)

let receive s =
  if not (Atomic.compare_and_set s.receiving false true) then
    invalid_arg "Hub.receive: another fiber is receiving";
  Fun.protect
    ~finally:(fun () -> Atomic.set s.receiving false)
    (fun () ->
      let ended () = Error (Option.get (Atomic.get s.ended)) in
      if Atomic.get s.ended <> None then ended ()
      else
        match Channel.recv s.queue with
        | m -> if Atomic.get s.ended = None then Ok m else ended ()
        | exception Channel.Closed -> ended ())

let with_subscription ?on_overflow hub f =
  let s = subscribe ?on_overflow hub in
  Fun.protect ~finally:(fun () -> unsubscribe s) (fun () -> f s)

let subscribers hub = List.length (Atomic.get hub.members)

let forward ?(binary = false) hub ws f =
  let send = if binary then Websocket.send_binary else Websocket.send_text in
  let on_overflow () = Websocket.abort ~code:1013 ~reason:"too slow" ws in
  with_subscription ~on_overflow hub (fun s ->
      Braid.Switch.run (fun sw ->
          let rec send_all () =
            match receive s with
            | Ok m ->
                send ws m;
                send_all ()
            | Error (Unsubscribed | Too_slow) -> ()
          in
          (* Closed: the connection is going away, and [f] sees it too. *)
          ignore
            (Braid.Switch.fork sw (fun () ->
                 try send_all () with Websocket.Closed -> ()));
          Fun.protect ~finally:(fun () -> unsubscribe s) f))

module Topics = struct
  let create_hub = create

  type ('k, 'a) hubs = {
    capacity : int;
    lock : Mutex.t;  (** Held for one table operation, never across a wait. *)
    table : ('k, 'a t) Hashtbl.t;
  }

  let create ?(capacity = 256) () =
    if capacity < 1 then invalid_arg "Hub.Topics.create: capacity < 1";
    { capacity; lock = Mutex.create (); table = Hashtbl.create 16 }

  let hub hubs key =
    Mutex.protect hubs.lock (fun () ->
        match Hashtbl.find_opt hubs.table key with
        | Some hub -> hub
        | None ->
            let hub = create_hub ~capacity:hubs.capacity () in
            Hashtbl.replace hubs.table key hub;
            hub)
end
