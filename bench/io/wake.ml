(* Cross-domain wake-up: an IO fiber hands a request to a worker domain and
   awaits the promise the worker fills, [rounds] times in a row. The worker
   spins on an atomic cell (it answers within nanoseconds of seeing a
   request), so the round trip minus the worker's simulated work is what
   waking the loop costs: pushing onto its queue and, if it sleeps, an
   eventfd write and the wake-up of its thread.

   Also the loop's own CPU use while it has nothing to do, idle from the
   start and woken by another domain every few milliseconds, because a loop
   that spins before sleeping must not spin when nothing comes. *)

open Bench_harness
module Promise = Braid_sync.Promise

let rounds = 20_000

(* No [Domain.cpu_relax] in the worker's loops: on a virtual machine a loop
   of [pause] instructions can get its virtual CPU descheduled, which would
   be measured as the loop's latency. *)
let busy_wait_ns ns =
  let until = Int64.add (Mtime_clock.now_ns ()) (Int64.of_int ns) in
  while Int64.compare (Mtime_clock.now_ns ()) until < 0 do
    ()
  done

let percentile sorted p =
  sorted.(min (Array.length sorted - 1) (Array.length sorted * p / 100))

(* Microseconds beyond [work_ns], median and 99th percentile. *)
let round_trips ~work_ns =
  let request : unit Promise.t option Atomic.t = Atomic.make None in
  let stop = Atomic.make false in
  let worker =
    Domain.spawn (fun () ->
        while not (Atomic.get stop) do
          match Atomic.exchange request None with
          | Some p ->
              if work_ns > 0 then busy_wait_ns work_ns;
              Promise.fill p ()
          | None -> ()
        done)
  in
  let extra =
    Fun.protect
      ~finally:(fun () ->
        Atomic.set stop true;
        Domain.join worker)
      (fun () ->
        Braid_io.run @@ fun () ->
        Array.init rounds (fun _ ->
            let p = Promise.create () in
            let t0 = Mtime_clock.now_ns () in
            Atomic.set request (Some p);
            Promise.await p;
            let ns = Int64.to_int (Int64.sub (Mtime_clock.now_ns ()) t0) in
            float (ns - work_ns) /. 1e3))
  in
  Array.sort compare extra;
  (percentile extra 50, percentile extra 99)

let loop_thread_cpu_s () =
  let pid = Unix.getpid () in
  match
    In_channel.with_open_text
      (Printf.sprintf "/proc/%d/task/%d/schedstat" pid pid)
      In_channel.input_line
  with
  | Some line -> Scanf.sscanf line "%f" Fun.id /. 1e9
  | None -> nan

(* CPU use of the loop's thread over [seconds] while its only fiber waits:
   for a timer, or for promises a worker domain fills every [every_ms]. *)
let idle_cpu ~seconds ~every_ms =
  Braid_io.run @@ fun () ->
  let t0 = now_s () and cpu0 = loop_thread_cpu_s () in
  (match every_ms with
  | None -> Braid_io.Time.sleep seconds
  | Some ms ->
      let n = int_of_float (seconds *. 1000. /. ms) in
      let request : unit Promise.t option Atomic.t = Atomic.make None in
      let worker =
        Domain.spawn (fun () ->
            for _ = 1 to n do
              let rec take () =
                match Atomic.exchange request None with
                | Some p -> p
                | None ->
                    Unix.sleepf 0.0001;
                    take ()
              in
              let p = take () in
              Unix.sleepf (ms /. 1000.);
              Promise.fill p ()
            done)
      in
      for _ = 1 to n do
        let p = Promise.create () in
        Atomic.set request (Some p);
        Promise.await p
      done;
      Domain.join worker);
  (loop_thread_cpu_s () -. cpu0) /. (now_s () -. t0)

let run ~quick =
  let seconds = if quick then 1. else 3. in
  let trips work_us =
    let median, p99 = round_trips ~work_ns:(work_us * 1000) in
    let name = Printf.sprintf "worker answers after %d us" work_us in
    [
      row name "wake-up cost, median" median "us";
      row name "wake-up cost, 99th percentile" p99 "us";
    ]
  in
  [ load_row "at start" ]
  @ trips 0 @ trips 10 @ trips 100
  @ [
      row "idle loop (one 3 s sleep)" "loop thread CPU use"
        (idle_cpu ~seconds ~every_ms:None)
        "cores";
      row "loop woken every 2 ms by a domain" "loop thread CPU use"
        (idle_cpu ~seconds ~every_ms:(Some 2.))
        "cores";
    ]

let experiment =
  {
    name = "io-wake";
    summary =
      "cross-domain wake-up of a Braid_io loop: latency of a promise filled by \
       another domain, and the loop's CPU use when idle";
    run;
  }
