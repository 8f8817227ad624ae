external wake_fd : unit -> Unix.file_descr = "braid_io_signal_wake_fd"
external install : int -> unit = "braid_io_signal_install"
external restore : int -> unit = "braid_io_signal_restore"
external delivered : int -> int = "braid_io_signal_count"

type t = {
  loop : Loop.t;
  signals : int array;
  seen : int array;  (** [delivered] of each signal when last reported. *)
  mutable active : bool;
}

(* Signal dispositions are process-wide, so this table is too: how many
   subscriptions each signal has (OCaml numbering), to install Braid's handler
   on the first and restore the previous disposition after the last. *)
let subscribers : (int, int) Hashtbl.t = Hashtbl.create 8
let subscribers_lock = Mutex.create ()

let retain signal =
  Mutex.protect subscribers_lock (fun () ->
      let n = Option.value (Hashtbl.find_opt subscribers signal) ~default:0 in
      (if n = 0 then
         try install signal
         with Unix.Unix_error _ | Invalid_argument _ ->
           invalid_arg
             (Printf.sprintf "Braid_io.Signal.subscribe: cannot catch signal %d"
                signal));
      Hashtbl.replace subscribers signal (n + 1))

let release signal =
  Mutex.protect subscribers_lock (fun () ->
      match Hashtbl.find_opt subscribers signal with
      | Some 1 ->
          Hashtbl.remove subscribers signal;
          restore signal
      | Some n -> Hashtbl.replace subscribers signal (n - 1)
      | None -> ())

let unsubscribe sub =
  if sub.active then (
    sub.active <- false;
    Array.iter release sub.signals)

let subscribe ~sw signals =
  let loop = Loop.current ~op:"Braid_io.Signal.subscribe" in
  if signals = [] then invalid_arg "Braid_io.Signal.subscribe: no signal";
  Io_error.of_unix (fun () -> Loop.watch_signals loop (wake_fd ()));
  let signals = Array.of_list signals in
  (* Read the counters before installing the handler: every delivery it
     counts from then on is new to us. *)
  let seen = Array.map delivered signals in
  let sub = { loop; signals; seen; active = true } in
  let installed = ref [] in
  (try
     Array.iter
       (fun signal ->
         retain signal;
         installed := signal :: !installed)
       signals
   with e ->
     List.iter release !installed;
     raise e);
  (match Braid.Switch.on_release sw (fun () -> unsubscribe sub) with
  | () -> ()
  | exception e ->
      unsubscribe sub;
      raise e);
  sub

let rec first_new sub i =
  if i = Array.length sub.signals then None
  else
    let count = delivered sub.signals.(i) in
    if count <> sub.seen.(i) then (
      sub.seen.(i) <- count;
      Some sub.signals.(i))
    else first_new sub (i + 1)

let rec wait sub =
  if not sub.active then
    invalid_arg "Braid_io.Signal.wait: the subscription's switch has finished";
  if Loop.current ~op:"Braid_io.Signal.wait" != sub.loop then
    invalid_arg "Braid_io.Signal.wait: subscribed from another loop";
  match first_new sub 0 with
  | Some signal -> signal
  | None ->
      (* No fiber switch between the check and the registration: a delivery
         in between leaves an edge that the next epoll_wait reports. *)
      Loop.await_signal_event sub.loop;
      wait sub

let await signals = Braid.Switch.run (fun sw -> wait (subscribe ~sw signals))
