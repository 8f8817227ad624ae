open Bench_harness
open Lwt.Syntax
module B = Braid_lwt
module Mvar = Braid_sync.Mvar
module Channel = Braid_sync.Channel

(* Each measurement is one [Lwt_main.run] that returns the seconds its
   exchange took, the echo side being started (and, on another domain,
   joined) outside the timed part. *)

let lwt_mvar n =
  Lwt_main.run
    (let ping = Lwt_mvar.create_empty () and pong = Lwt_mvar.create_empty () in
     let rec echo i =
       if i = n then Lwt.return_unit
       else
         let* v = Lwt_mvar.take ping in
         let* () = Lwt_mvar.put pong v in
         echo (i + 1)
     in
     let rec client i =
       if i = n then Lwt.return_unit
       else
         let* () = Lwt_mvar.put ping i in
         let* _ = Lwt_mvar.take pong in
         client (i + 1)
     in
     let t0 = now_s () in
     let+ () = Lwt.join [ echo 0; client 0 ] in
     now_s () -. t0)

(* The Lwt side of every Braid variant. *)
let client t ~ping ~pong n =
  let rec go i =
    if i = n then Lwt.return_unit
    else
      let* () = B.Mvar.put t ping i in
      let* _ = B.Mvar.take t pong in
      go (i + 1)
  in
  go 0

let echo_direct ~ping ~pong n =
  for _ = 1 to n do
    Mvar.put pong (Mvar.take ping)
  done

(* Lwt thread <-> Lwt thread, both through the bridge: the bridge's own
   cost next to Lwt_mvar. *)
let bridge_lwt_to_lwt n =
  Lwt_main.run
    (let t = B.create () in
     let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
     let rec echo i =
       if i = n then Lwt.return_unit
       else
         let* v = B.Mvar.take t ping in
         let* () = B.Mvar.put t pong v in
         echo (i + 1)
     in
     let t0 = now_s () in
     let+ () = Lwt.join [ echo 0; client t ~ping ~pong n ] in
     now_s () -. t0)

(* Lwt thread <-> a direct-style fiber of the bridge, same thread. *)
let bridge_fiber_same_domain n =
  Lwt_main.run
    (let t = B.create () in
     let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
     let t0 = now_s () in
     let echo = B.run t (fun () -> echo_direct ~ping ~pong n) in
     let+ () = Lwt.join [ echo; client t ~ping ~pong n ] in
     now_s () -. t0)

(* Lwt thread <-> a fiber of a scheduler on another domain. *)
let other_domain scheduler n =
  let ping = Mvar.create_empty () and pong = Mvar.create_empty () in
  let echo =
    Domain.spawn (fun () ->
        scheduler (fun () ->
            Mvar.put pong (Mvar.take ping);
            echo_direct ~ping ~pong n))
  in
  let seconds =
    Lwt_main.run
      (let t = B.create () in
       (* One round trip first: the domain is up. *)
       let* () = B.Mvar.put t ping 0 in
       let* _ = B.Mvar.take t pong in
       let t0 = now_s () in
       let+ () = client t ~ping ~pong n in
       now_s () -. t0)
  in
  Domain.join echo;
  seconds

(* Pipelined: one Lwt thread sends n values into a channel, a FIFO fiber on
   another domain forwards them into a second one, another Lwt thread
   receives them. Wake-ups are shared by many messages. *)
let stream_other_domain n =
  let there = Channel.create 64 and back = Channel.create 64 in
  let forward =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            for _ = 0 to n do
              Channel.send back (Channel.recv there)
            done))
  in
  let seconds =
    Lwt_main.run
      (let t = B.create () in
       let* () = B.Channel.send t there (-1) in
       let* _ = B.Channel.recv t back in
       let rec send i =
         if i = n then Lwt.return_unit
         else
           let* () = B.Channel.send t there i in
           send (i + 1)
       in
       let rec recv i =
         if i = n then Lwt.return_unit
         else
           let* _ = B.Channel.recv t back in
           recv (i + 1)
       in
       let t0 = now_s () in
       let+ () = Lwt.join [ send 0; recv 0 ] in
       now_s () -. t0)
  in
  Domain.join forward;
  seconds

let run ~quick =
  let load = load_average () in
  let scale = if quick then 1 else 10 in
  let reps = if quick then 3 else 7 in
  let per_trip n measure =
    ignore (measure (n / 10));
    repeat_median reps (fun () -> measure n) *. 1e9 /. float_of_int n
  in
  let lwt = per_trip (100_000 * scale) lwt_mvar in
  let bridge_lwt = per_trip (50_000 * scale) bridge_lwt_to_lwt in
  let same = per_trip (50_000 * scale) bridge_fiber_same_domain in
  let fifo = per_trip (10_000 * scale) (other_domain Braid_fifo.run) in
  let io = per_trip (10_000 * scale) (other_domain (fun f -> Braid_io.run f)) in
  let stream = per_trip (50_000 * scale) stream_other_domain in
  let trip name v = row name "round trip" v "ns" in
  [
    row "machine" "load average (1 min) at start" load "";
    trip "lwt_mvar: Lwt thread <-> Lwt thread" lwt;
    trip "braid mvar: Lwt thread <-> Lwt thread (bridge)" bridge_lwt;
    trip "braid mvar: Lwt thread <-> bridge fiber, same domain" same;
    trip "braid mvar: Lwt thread <-> FIFO fiber, other domain" fifo;
    trip "braid mvar: Lwt thread <-> IO fiber, other domain" io;
    row "braid channel(64): Lwt -> FIFO fiber -> Lwt, pipelined" "per message"
      stream "ns";
    ratio "lwt_mvar / bridge, Lwt <-> Lwt (cost ratio)" (lwt /. bridge_lwt);
    ratio "lwt_mvar / bridge fiber, same domain (cost ratio)" (lwt /. same);
    ratio "lwt_mvar / FIFO fiber, other domain (cost ratio)" (lwt /. fifo);
    ratio "lwt_mvar / IO fiber, other domain (cost ratio)" (lwt /. io);
  ]

let experiment =
  {
    name = "lwt-bridge";
    summary =
      "ns per round trip Lwt -> Braid fiber -> Lwt through Braid MVars (same \
       domain, FIFO and IO on another domain) vs Lwt_mvar";
    run;
  }
