module Switch = Braid.Switch
module Fiber = Braid.Fiber
module Fd = Fd
module Net = Net
module Udp = Udp
module Time = Time
module Signal = Signal
module Process = Process
module Blocking = Blocking
module Buf_read = Buf_read
module File = File
module Path = Path
module File_access = File_access

exception Io_error = Io_error.Io_error

let error_message = Io_error.message

module Private = struct
  module Epoll = struct
    include Epoll
  end
end

type backend = Poller.backend = Epoll | Uring

let backend_of_string = Poller.backend_of_string
let string_of_backend = Poller.string_of_backend
let run ?backend main = Loop.run ?backend main
let backend () = Loop.backend (Loop.current ~op:"Braid_io.backend")

type stats = Loop.stats = {
  fibers : int;
  open_fds : int;
  fd_waiters : int;
  timers : int;
  signal_waiters : int;
}

let yield_background () =
  Loop.yield_background (Loop.current ~op:"Braid_io.yield_background")

type loop = Loop.t

let current_loop () = Loop.current ~op:"Braid_io.current_loop"
let fork_daemon f = Loop.fork_daemon (Loop.current ~op:"Braid_io.fork_daemon") f
let polls = Loop.polls_here
let stats () = Loop.stats (Loop.current ~op:"Braid_io.stats")

(* Each domain's body runs in a switch published here, so that the first
   failure can cancel the other domains. A domain that publishes after the
   failure sees [failed] and cancels itself. *)
type group = {
  switches : Switch.t option Atomic.t array;
  failed : bool Atomic.t;
}

let cancel_all group =
  Atomic.set group.failed true;
  Array.iter (fun s -> Option.iter Switch.cancel (Atomic.get s)) group.switches

let run_member ~backend group f i () =
  match
    run ~backend (fun () ->
        Switch.run (fun sw ->
            Atomic.set group.switches.(i) (Some sw);
            if Atomic.get group.failed then Switch.cancel sw;
            f ~domain:i))
  with
  | v -> Ok v
  | exception e ->
      let bt = Printexc.get_raw_backtrace () in
      cancel_all group;
      Error (e, bt)

let is_cancellation = function
  | Error (Braid.Cancelled, _) -> true
  | Error _ | Ok _ -> false

let run_domains ?(backend = Poller.default_backend ()) ~domains f =
  if domains < 1 then invalid_arg "Braid_io.run_domains: domains < 1";
  if Loop.running_here () then
    invalid_arg "Braid_io.run_domains: this domain already runs an event loop";
  let group =
    {
      switches = Array.init domains (fun _ -> Atomic.make None);
      failed = Atomic.make false;
    }
  in
  let others =
    List.init (domains - 1) (fun i ->
        Domain.spawn (run_member ~backend group f (i + 1)))
  in
  let first = run_member ~backend group f 0 () in
  let results = first :: List.map Domain.join others in
  (* Report the failure that started it all, not the cancellations it
     caused. *)
  let failures = List.filter Result.is_error results in
  match List.filter (fun r -> not (is_cancellation r)) failures @ failures with
  | Error (e, bt) :: _ -> Printexc.raise_with_backtrace e bt
  | Ok _ :: _ -> assert false
  | [] -> List.map (function Ok v -> v | Error _ -> assert false) results
