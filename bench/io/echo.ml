(* 100 connections ping-pong 64-byte messages with an echo server.

   Fairness on a 2-core machine: each server runs alone in a forked process
   and the client in this process, so server and client each get a core.
   The client is the same Braid_io program for both servers, and the two
   servers run alternately, several times, median taken. If the client
   saturates its core first, round trips per second understate the faster
   server's lead; server CPU time per round trip (read from the reaped child)
   does not depend on that. *)

open Bench_harness
module Net = Braid_io.Net
module Switch = Braid_io.Switch
module Fiber = Braid_io.Fiber

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

let braid_server listener () =
  Braid_io.run @@ fun () ->
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

(* The client: [connections] fibers, each writing a message and reading its
   echo in a loop. Counts round trips during [duration] after [warm_up], and
   how busy the client process was meanwhile: near one core means the
   client, not the server, set the pace. *)
type client_run = { per_second : float; total : int; client_busy : float }

let read_exactly s buf n =
  let rec go off =
    if off < n then
      match Net.read_into s buf off (n - off) with
      | 0 -> failwith "echo client: the server closed the connection"
      | k -> go (off + k)
  in
  go 0

let own_cpu_s () =
  let t = Unix.times () in
  t.tms_utime +. t.tms_stime

let client ~port ~warm_up ~duration =
  Braid_io.run @@ fun () ->
  let addr = Net.tcp "127.0.0.1" port in
  let count = ref 0 and stop = ref false in
  let per_second, client_busy =
    Switch.run @@ fun sw ->
    for _ = 1 to connections do
      ignore
        (Fiber.fork ~sw (fun () ->
             Switch.run @@ fun sw ->
             let s = Net.connect ~sw addr in
             Unix.setsockopt (Braid_io.Fd.to_unix s) Unix.TCP_NODELAY true;
             let buf = Bytes.make message_size 'x' in
             while not !stop do
               Net.write_all s buf 0 message_size;
               read_exactly s buf message_size;
               incr count
             done))
    done;
    Braid_io.Time.sleep warm_up;
    let c0 = !count and t0 = now_s () and cpu0 = own_cpu_s () in
    Braid_io.Time.sleep duration;
    let c1 = !count and t1 = now_s () and cpu1 = own_cpu_s () in
    stop := true;
    (float (c1 - c0) /. (t1 -. t0), (cpu1 -. cpu0) /. (t1 -. t0))
  in
  { per_second; total = !count; client_busy }

type measurement = { rate : float; server_us : float; busy : float }

(* One measurement: fork [server], drive it, kill it. The server's CPU time
   (read once it is reaped) over all the round trips it served. *)
let measure ~lwt server ~warm_up ~duration =
  let listener, port = listening_socket () in
  let child = Child.run ~lwt (server listener) in
  Unix.close listener;
  let cpu_before = Child.children_cpu_s () in
  let r = client ~port ~warm_up ~duration in
  Child.kill child;
  let cpu = Child.children_cpu_s () -. cpu_before in
  {
    rate = r.per_second;
    server_us = cpu *. 1e6 /. float r.total;
    busy = r.client_busy;
  }

let load_average () =
  match In_channel.with_open_text "/proc/loadavg" In_channel.input_line with
  | Some line -> (
      match String.split_on_char ' ' line with
      | one :: _ -> Option.value (float_of_string_opt one) ~default:nan
      | [] -> nan)
  | None | (exception Sys_error _) -> nan

(* Many short rounds, the two servers alternating, and ratios taken within
   each round: a neighbour's burst of load hits both sides of a ratio. *)
let run ~quick =
  let warm_up, duration, rounds =
    if quick then (0.2, 1.0, 2) else (0.3, 2.0, 8)
  in
  let load = load_average () in
  let pairs =
    List.init rounds (fun i ->
        progress "  round %d/%d: braid_io server, then lwt_unix" (i + 1) rounds;
        let braid = measure ~lwt:false braid_server ~warm_up ~duration in
        let lwt = measure ~lwt:true lwt_server ~warm_up ~duration in
        (braid, lwt))
  in
  let med f = median (List.map f pairs) in
  let braid f = med (fun (b, _) -> f b) and lwt f = med (fun (_, l) -> f l) in
  let rate m = m.rate and server_us m = m.server_us and busy m = m.busy in
  [
    row "machine" "load average (1 min) at start" load "";
    row "braid_io server" "round trips per second" (braid rate) "msg/s";
    row "lwt_unix server" "round trips per second" (lwt rate) "msg/s";
    ratio "braid_io / lwt_unix (round trips per second)"
      (med (fun (b, l) -> b.rate /. l.rate));
    row "braid_io server" "server CPU per round trip" (braid server_us) "us";
    row "lwt_unix server" "server CPU per round trip" (lwt server_us) "us";
    ratio "lwt_unix / braid_io (server CPU per round trip)"
      (med (fun (b, l) -> l.server_us /. b.server_us));
    row "client vs braid_io" "client CPU use" (braid busy) "cores";
    row "client vs lwt_unix" "client CPU use" (lwt busy) "cores";
  ]

let experiment =
  {
    name = "echo";
    summary =
      "100 connections ping-ponging 64-byte messages: Braid_io vs Lwt_unix \
       echo servers, same client";
    run;
  }
