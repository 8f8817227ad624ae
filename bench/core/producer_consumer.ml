(* The thesis's Table 6.1: a producer sends 0..n-1 through a 1-slot
   structure, a consumer takes them. Serially (both on one domain) and in
   parallel (one domain each). *)

open Bench_harness

let ns_per_message n seconds = seconds *. 1e9 /. float_of_int n

(* Serial: both loops as fibers of one FIFO scheduler. *)
let braid_serial ~put ~take make n =
  time_s (fun () ->
      Braid_fifo.run (fun () ->
          let box = make () in
          let consumer =
            Braid.Fiber.fork (fun () ->
                for _ = 1 to n do
                  ignore (Sys.opaque_identity (take box))
                done)
          in
          for i = 1 to n do
            put box i
          done;
          Braid.Fiber.join consumer))

let lwt_mvar_serial n =
  time_s (fun () ->
      Lwt_main.run
        (let box = Lwt_mvar.create_empty () in
         let rec produce i =
           if i > n then Lwt.return_unit
           else Lwt.bind (Lwt_mvar.put box i) (fun () -> produce (i + 1))
         in
         let rec consume i =
           if i > n then Lwt.return_unit
           else Lwt.bind (Lwt_mvar.take box) (fun _ -> consume (i + 1))
         in
         Lwt.join [ produce 1; consume 1 ]))

(* Parallel: a FIFO scheduler on each of two domains. *)
let braid_parallel ~put ~take make n =
  let box = make () in
  time_s (fun () ->
      let consumer =
        Domain.spawn (fun () ->
            Braid_fifo.run (fun () ->
                for _ = 1 to n do
                  ignore (Sys.opaque_identity (take box))
                done))
      in
      Braid_fifo.run (fun () ->
          for i = 1 to n do
            put box i
          done);
      Domain.join consumer)

(* The hardware floor: Saturn's SPSC queue of capacity 1, both sides
   busy-waiting. It burns both cores and cannot serve more than one
   producer/consumer pair, but no handoff can be cheaper. *)
let saturn_spsc_parallel n =
  let module Q = Saturn.Single_prod_single_cons_queue in
  let q = Q.create ~size_exponent:0 in
  time_s (fun () ->
      let consumer =
        Domain.spawn (fun () ->
            let rec take () =
              match Q.pop_opt q with
              | Some v -> v
              | None ->
                  Domain.cpu_relax ();
                  take ()
            in
            for _ = 1 to n do
              ignore (Sys.opaque_identity (take ()))
            done)
      in
      for i = 1 to n do
        while not (Q.try_push q i) do
          Domain.cpu_relax ()
        done
      done;
      Domain.join consumer)

(* The classic domain-blocking MVar: Stdlib mutex and condition variables. *)
module Stdlib_mvar = struct
  type 'a t = {
    lock : Mutex.t;
    changed : Condition.t;
    mutable slot : 'a option;
  }

  let create () =
    { lock = Mutex.create (); changed = Condition.create (); slot = None }

  let put t v =
    Mutex.lock t.lock;
    while Option.is_some t.slot do
      Condition.wait t.changed t.lock
    done;
    t.slot <- Some v;
    Condition.broadcast t.changed;
    Mutex.unlock t.lock

  let take t =
    Mutex.lock t.lock;
    let rec wait () =
      match t.slot with
      | Some v -> v
      | None ->
          Condition.wait t.changed t.lock;
          wait ()
    in
    let v = wait () in
    t.slot <- None;
    Condition.broadcast t.changed;
    Mutex.unlock t.lock;
    v
end

let stdlib_mvar_parallel n =
  let box = Stdlib_mvar.create () in
  time_s (fun () ->
      let consumer =
        Domain.spawn (fun () ->
            for _ = 1 to n do
              ignore (Sys.opaque_identity (Stdlib_mvar.take box))
            done)
      in
      for i = 1 to n do
        Stdlib_mvar.put box i
      done;
      Domain.join consumer)

let mvar =
  (Braid_sync.Mvar.put, Braid_sync.Mvar.take, Braid_sync.Mvar.create_empty)

let channel =
  ( Braid_sync.Channel.send,
    Braid_sync.Channel.recv,
    fun () -> Braid_sync.Channel.create 1 )

let run ~quick =
  let serial_n = if quick then 1_000_000 else 10_000_000 in
  let parallel_n = if quick then 100_000 else 1_000_000 in
  let repeats = if quick then 1 else 5 in
  let measure label n f =
    progress "  %s (n = %d, median of %d)" label n repeats;
    ns_per_message n (repeat_median repeats (fun () -> f n))
  in
  let serial (put, take, make) n = braid_serial ~put ~take make n in
  let parallel (put, take, make) n = braid_parallel ~put ~take make n in
  let s_mvar = measure "braid mvar serial" serial_n (serial mvar) in
  let s_chan = measure "braid channel(1) serial" serial_n (serial channel) in
  let s_lwt = measure "lwt_mvar serial" serial_n lwt_mvar_serial in
  let p_mvar = measure "braid mvar parallel" parallel_n (parallel mvar) in
  let p_chan =
    measure "braid channel(1) parallel" parallel_n (parallel channel)
  in
  let p_saturn =
    measure "saturn spsc busy-wait parallel" parallel_n saturn_spsc_parallel
  in
  (* Some 50 us per message: a tenth of the messages gives a stable figure
     in a tenth of the time. *)
  let p_stdlib =
    measure "stdlib mutex/condition mvar parallel" (parallel_n / 10)
      stdlib_mvar_parallel
  in
  let ns name v = row name "time per message" v "ns" in
  [
    ns "braid mvar serial" s_mvar;
    ns "braid channel(1) serial" s_chan;
    ns "lwt_mvar serial" s_lwt;
    ratio "lwt_mvar / braid mvar (serial)" (s_lwt /. s_mvar);
    ratio "lwt_mvar / braid channel (serial)" (s_lwt /. s_chan);
    ns "braid mvar parallel" p_mvar;
    ns "braid channel(1) parallel" p_chan;
    ns "saturn spsc busy-wait parallel" p_saturn;
    ns "stdlib mutex/condition mvar parallel" p_stdlib;
    ratio "saturn spsc / braid mvar (parallel)" (p_saturn /. p_mvar);
    ratio "stdlib mvar / braid mvar (parallel)" (p_stdlib /. p_mvar);
    ratio "saturn spsc / braid channel (parallel)" (p_saturn /. p_chan);
  ]

let experiment : experiment =
  {
    name = "producer-consumer";
    summary =
      "1-slot handoff cost: Braid Mvar/Channel vs Lwt_mvar (serial), Saturn \
       and Stdlib (parallel)";
    run;
  }
