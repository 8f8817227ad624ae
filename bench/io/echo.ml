(* 100 connections ping-pong 64-byte messages with an echo server.

   What limits the run must be the server, or round trips per second say
   nothing about it. So each server runs alone in a forked process pinned to
   core 0, and the client in this process pinned to core 1; the client is
   as cheap per round trip as an OCaml program can be (a raw epoll loop: one
   read and one write per echo, no allocation), and it never sleeps, so that
   neither its wake-ups (tens of microseconds on a virtual machine, which
   would make the run latency-bound) nor their cost to the server count.
   Still, loopback TCP costs about as much in the kernel on both sides, so
   the client can only just keep up with a fast server: each run reports
   the server's CPU use and the share of the client's time spent finding
   nothing to do, and server CPU time per round trip, which does not depend
   on who set the pace, is the primary figure. The two servers run
   alternately, several times; medians are taken, ratios within rounds. *)

open Bench_harness
module Net = Braid_io.Net
module Switch = Braid_io.Switch
module Epoll = Braid_io.Private.Epoll

let connections = 100
let message_size = 64
let buffer_size = 4096

let listening_socket () =
  let fd = Unix.socket ~cloexec:true Unix.PF_INET Unix.SOCK_STREAM 0 in
  Unix.setsockopt fd Unix.SO_REUSEADDR true;
  Unix.bind fd (Unix.ADDR_INET (Unix.inet_addr_loopback, 0));
  Unix.listen fd 1024;
  match Unix.getsockname fd with
  | Unix.ADDR_INET (_, port) -> (fd, port)
  | Unix.ADDR_UNIX _ -> assert false

(* The servers: a plain echo loop per connection, in each library's idiom. *)

(* [backend]: BRAID_IO_BACKEND's if omitted (the profiling role). *)
let braid_server ?backend listener () =
  Braid_io.run ?backend @@ fun () ->
  Switch.run @@ fun sw ->
  let listener = Braid_io.Fd.of_unix ~sw listener in
  while true do
    Net.accept_fork ~sw ~on_error:ignore listener (fun client _ ->
        let buf = Bytes.create buffer_size in
        let rec echo () =
          match Net.read_into client buf 0 buffer_size with
          | 0 -> ()
          | n ->
              Net.write_all client buf 0 n;
              echo ()
        in
        echo ())
  done;
  ""

let lwt_server listener () =
  let open Lwt.Syntax in
  let listener = Lwt_unix.of_unix_file_descr ~blocking:false listener in
  let rec write_all fd buf off len =
    if len = 0 then Lwt.return_unit
    else
      let* n = Lwt_unix.write fd buf off len in
      write_all fd buf (off + n) (len - n)
  in
  let rec echo fd buf =
    let* n = Lwt_unix.read fd buf 0 buffer_size in
    if n = 0 then Lwt_unix.close fd
    else
      let* () = write_all fd buf 0 n in
      echo fd buf
  in
  let rec accept_loop () =
    let* fd, _ = Lwt_unix.accept listener in
    Lwt.async (fun () ->
        Lwt.catch
          (fun () -> echo fd (Bytes.create buffer_size))
          (fun _ -> Lwt_unix.close fd));
    accept_loop ()
  in
  Lwt_main.run (accept_loop ())

(* CPU time of every thread of process [pid] ("self" for this one), in
   seconds, from the scheduler's nanosecond accounting. *)
let cpu_s pid =
  let dir = Printf.sprintf "/proc/%s/task" pid in
  Array.fold_left
    (fun total task ->
      match
        In_channel.with_open_text
          (Filename.concat dir (Filename.concat task "schedstat"))
          In_channel.input_line
      with
      | Some line -> total +. (Scanf.sscanf line "%f" Fun.id /. 1e9)
      | None | (exception Sys_error _) -> total)
    0. (Sys.readdir dir)

let own_cpu_s () = cpu_s "self"

(* Server on core 0, client on core 1: each has a core to itself, and
   neither's wake-ups migrate it. Where that fails (a machine with one core)
   they run unpinned. Not gated on [Domain.recommended_domain_count]: it
   follows this process's affinity, so it says 1 once the client is
   pinned. *)
let pin pid cpu =
  let null = Unix.openfile "/dev/null" [ O_WRONLY ] 0 in
  let argv = [| "taskset"; "-a"; "-p"; "-c"; cpu; string_of_int pid |] in
  Fun.protect
    ~finally:(fun () -> Unix.close null)
    (fun () ->
      match Unix.create_process "taskset" argv Unix.stdin null null with
      | child -> Child.reap child
      | exception Unix.Unix_error _ -> ())

let allowed_cpus () =
  In_channel.with_open_text "/proc/self/status" (fun ic ->
      let rec find () =
        match In_channel.input_line ic with
        | Some l when String.starts_with ~prefix:"Cpus_allowed_list:" l ->
            String.trim (String.sub l 18 (String.length l - 18))
        | Some _ -> find ()
        | None -> "0"
      in
      find ())

(* The client: one raw epoll loop with a zero timeout; [~spin:false] makes
   it block in [epoll_wait] instead (for comparison by hand). *)
type client_run = {
  round_trips : int;  (** In the measured window. *)
  total : int;  (** Warm-up included. *)
  wall_s : float;
  client_cpu : float;
  client_idle : float;  (** Seconds in polls that found nothing. *)
}

let connect_all ~port =
  Array.init connections (fun _ ->
      let s = Unix.socket ~cloexec:true PF_INET SOCK_STREAM 0 in
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
      Unix.setsockopt s TCP_NODELAY true;
      Unix.set_nonblock s;
      s)

let client ~spin ~port ~warm_up ~duration ~on_window =
  let socks = connect_all ~port in
  let ep = Epoll.create () in
  Array.iteri (fun i s -> Epoll.add ep s Epoll.readable ~token:i) socks;
  let events = Epoll.events connections in
  let message = Bytes.make message_size 'x' in
  let buf = Bytes.create message_size in
  (* Bytes of the current echo still to come, per connection. *)
  let missing = Array.make connections message_size in
  let count = ref 0 in
  let send s =
    if Unix.write s message 0 message_size <> message_size then
      failwith "echo client: short write"
  in
  (* Seconds spent in polls that found nothing: the client waiting for the
     server. *)
  let idle = ref 0. in
  let rec until deadline =
    let t = now_s () in
    let n = Epoll.wait ep events ~timeout_ms:(if spin then 0 else 10) in
    if n = 0 then idle := !idle +. (now_s () -. t);
    for e = 0 to n - 1 do
      let i = Epoll.token events e in
      let s = socks.(i) in
      match Unix.read s buf 0 missing.(i) with
      | 0 -> failwith "echo client: the server closed the connection"
      | k ->
          missing.(i) <- missing.(i) - k;
          if missing.(i) = 0 then (
            missing.(i) <- message_size;
            incr count;
            send s)
      | exception Unix.Unix_error ((EAGAIN | EWOULDBLOCK), _, _) -> ()
    done;
    if t < deadline then until deadline
  in
  Array.iter send socks;
  until (now_s () +. warm_up);
  let c0 = !count and t0 = now_s () and cpu0 = own_cpu_s () in
  idle := 0.;
  let window = on_window () in
  until (t0 +. duration);
  let c1 = !count and t1 = now_s () and cpu1 = own_cpu_s () in
  let server_cpu = window () in
  Array.iter Unix.close socks;
  Epoll.close ep;
  ( {
      round_trips = c1 - c0;
      total = !count;
      wall_s = t1 -. t0;
      client_cpu = cpu1 -. cpu0;
      client_idle = !idle;
    },
    server_cpu )

type measurement = {
  rate : float;  (** Round trips per second. *)
  server_us : float;  (** Server CPU per round trip. *)
  server_busy : float;  (** Server CPU use, in cores. *)
  client_us : float;  (** Client CPU per round trip. *)
  client_busy : float;  (** Client CPU use, in cores. *)
  client_waiting : float;
      (** Share of the client's time spent finding nothing to do. *)
}

(* One measurement: fork [server] pinned to core 0, drive it from core 1 and
   kill it. Both CPU times cover the measured window only. *)
let measure ~spin ~lwt server ~warm_up ~duration =
  let listener, port = listening_socket () in
  let ((pid, _) as child) = Child.run ~lwt (server listener) in
  Unix.close listener;
  let self = Unix.getpid () and cpus = allowed_cpus () in
  pin pid "0";
  pin self "1";
  let r, server_cpu =
    Fun.protect
      ~finally:(fun () ->
        Child.kill child;
        pin self cpus)
      (fun () ->
        client ~spin ~port ~warm_up ~duration ~on_window:(fun () ->
            let before = cpu_s (string_of_int pid) in
            fun () -> cpu_s (string_of_int pid) -. before))
  in
  let per_trip cpu = cpu *. 1e6 /. float r.round_trips in
  {
    rate = float r.round_trips /. r.wall_s;
    server_us = per_trip server_cpu;
    server_busy = server_cpu /. r.wall_s;
    client_us = per_trip r.client_cpu;
    client_busy = r.client_cpu /. r.wall_s;
    client_waiting = r.client_idle /. r.wall_s;
  }

(* Many short rounds, the servers alternating (Braid_io on each of its
   backends, and Lwt), and ratios taken within each round: a neighbour's
   burst of load hits both sides of a ratio. *)
let run ~quick =
  let warm_up, duration, rounds =
    if quick then (0.2, 1.0, 2) else (0.3, 2.0, 8)
  in
  let load = load_average () in
  let pairs =
    List.init rounds (fun i ->
        progress
          "  round %d/%d: braid_io server (epoll, io_uring), then lwt_unix"
          (i + 1) rounds;
        let braid =
          measure ~spin:true ~lwt:false
            (braid_server ~backend:Braid_io.Epoll)
            ~warm_up ~duration
        in
        let uring =
          measure ~spin:true ~lwt:false
            (braid_server ~backend:Braid_io.Uring)
            ~warm_up ~duration
        in
        let lwt = measure ~spin:true ~lwt:true lwt_server ~warm_up ~duration in
        (braid, uring, lwt))
  in
  let med f = median (List.map f pairs) in
  let braid f = med (fun (b, _, _) -> f b)
  and uring f = med (fun (_, u, _) -> f u)
  and lwt f = med (fun (_, _, l) -> f l) in
  let rate m = m.rate and server_us m = m.server_us in
  let server_busy m = m.server_busy and client_us m = m.client_us in
  let client_busy m = m.client_busy and waiting m = m.client_waiting in
  [
    row "machine" "load average (1 min) at start" load "";
    row "braid_io server" "round trips per second" (braid rate) "msg/s";
    row "lwt_unix server" "round trips per second" (lwt rate) "msg/s";
    row "braid_io (io_uring) server" "round trips per second" (uring rate)
      "msg/s";
    ratio "braid_io / lwt_unix (round trips per second)"
      (med (fun (b, _, l) -> b.rate /. l.rate));
    ratio "braid_io io_uring / epoll (round trips per second)"
      (med (fun (b, u, _) -> u.rate /. b.rate));
    row "braid_io server" "server CPU per round trip" (braid server_us) "us";
    row "lwt_unix server" "server CPU per round trip" (lwt server_us) "us";
    row "braid_io (io_uring) server" "server CPU per round trip"
      (uring server_us) "us";
    ratio "lwt_unix / braid_io (server CPU per round trip)"
      (med (fun (b, _, l) -> l.server_us /. b.server_us));
    ratio "braid_io epoll / io_uring (server CPU per round trip)"
      (med (fun (b, u, _) -> b.server_us /. u.server_us));
    row "braid_io server" "server CPU use" (braid server_busy) "cores";
    row "lwt_unix server" "server CPU use" (lwt server_busy) "cores";
    row "braid_io (io_uring) server" "server CPU use" (uring server_busy)
      "cores";
    row "client vs braid_io" "client CPU per round trip" (braid client_us) "us";
    row "client vs lwt_unix" "client CPU per round trip" (lwt client_us) "us";
    row "client vs braid_io" "client CPU use" (braid client_busy) "cores";
    row "client vs lwt_unix" "client CPU use" (lwt client_busy) "cores";
    row "client vs braid_io" "client time finding nothing to do" (braid waiting)
      "share";
    row "client vs lwt_unix" "client time finding nothing to do" (lwt waiting)
      "share";
    row "client vs braid_io (io_uring)" "client time finding nothing to do"
      (uring waiting) "share";
  ]

(* Roles, for profiling a server by hand (strace, callgrind): with
   BRAID_BENCH_ROLE set to one of these, the benchmark binary serves or
   drives BRAID_BENCH_PORT instead of benchmarking. *)
let () =
  let port () = int_of_string (Sys.getenv "BRAID_BENCH_PORT") in
  let serve server =
    let fd = Unix.socket ~cloexec:true PF_INET SOCK_STREAM 0 in
    Unix.setsockopt fd SO_REUSEADDR true;
    Unix.bind fd (ADDR_INET (Unix.inet_addr_loopback, port ()));
    Unix.listen fd 1024;
    ignore (server fd ());
    exit 0
  in
  let gc_on_term () =
    (* What the server allocated, printed when the profiling script stops
       it. *)
    Sys.set_signal Sys.sigterm
      (Signal_handle
         (fun _ ->
           let s = Gc.quick_stat () in
           Printf.eprintf "minor_words %.0f promoted_words %.0f\n%!"
             s.minor_words s.promoted_words;
           exit 0))
  in
  match Sys.getenv_opt "BRAID_BENCH_ROLE" with
  | Some "io-echo-braid" ->
      gc_on_term ();
      serve (braid_server ?backend:None)
  | Some "io-echo-lwt" -> serve lwt_server
  | Some "io-echo-client" ->
      let duration =
        Option.fold ~none:5. ~some:float_of_string
          (Sys.getenv_opt "BRAID_BENCH_SECONDS")
      in
      let r, () =
        client
          ~spin:(Sys.getenv_opt "BRAID_BENCH_SPIN" = Some "1")
          ~port:(port ()) ~warm_up:0.5 ~duration
          ~on_window:(fun () () -> ())
      in
      Printf.printf
        "%d round trips in %.2f s: %.0f/s, client CPU %.2f us each (%d in \
         all), waiting %.0f%%\n"
        r.round_trips r.wall_s
        (float r.round_trips /. r.wall_s)
        (r.client_cpu *. 1e6 /. float r.round_trips)
        r.total
        (100. *. r.client_idle /. r.wall_s);
      exit 0
  | Some _ | None -> ()

let experiment =
  {
    name = "echo";
    summary =
      "100 connections ping-ponging 64-byte messages: Braid_io vs Lwt_unix \
       echo servers, same client";
    run;
  }
