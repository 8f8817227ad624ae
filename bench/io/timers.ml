(* 100,000 sleepers sharing one deadline.

   Memory and wake-up are measured in separate fresh processes: RSS does not
   shrink after a run, so sharing a process would charge one peer for the
   other's memory, and a full GC between starting the sleepers and their
   deadline would eat into the deadline. Fiber stacks live outside the OCaml
   heap, hence RSS next to heap words. *)

open Bench_harness

let sleepers = 100_000

type memory = { rss_bytes : float; heap_words : float }
(* Per sleeper. *)

type timing = { start_us : float; wake_ms : float }
(* [start_us]: per sleeper, from creating it until it sleeps. [wake_ms]: from
   the deadline until the last sleeper has run. *)

let rss_bytes () =
  let line =
    In_channel.with_open_text "/proc/self/status" (fun ic ->
        let rec find () =
          match In_channel.input_line ic with
          | Some l when String.starts_with ~prefix:"VmRSS:" l -> l
          | Some _ -> find ()
          | None -> failwith "no VmRSS"
        in
        find ())
  in
  Scanf.sscanf line "VmRSS: %d kB" (fun kb -> float kb *. 1024.)

let heap_words () =
  Gc.full_major ();
  float (Gc.stat ()).live_words

let per_sleeper ~before ~after = (after -. before) /. float sleepers
let encode a b = Printf.sprintf "%h %h" a b
let decode s = Scanf.sscanf s "%h %h" (fun a b -> (a, b))

(* Memory: start the sleepers with a far deadline, measure, stop them. *)

exception Measured of string

let braid_memory () =
  let open Braid_io in
  run @@ fun () ->
  let rss0 = rss_bytes () and words0 = heap_words () in
  match
    Switch.run (fun sw ->
        for _ = 1 to sleepers do
          ignore (Fiber.fork ~sw (fun () -> Time.sleep 3600.))
        done;
        (* Every fiber forked so far runs, and sleeps, before this one. *)
        Fiber.yield ();
        let rss1 = rss_bytes () and words1 = heap_words () in
        raise
          (Measured
             (encode
                (per_sleeper ~before:rss0 ~after:rss1)
                (per_sleeper ~before:words0 ~after:words1))))
  with
  | () -> assert false
  | exception Measured result -> result

let lwt_memory () =
  let rss0 = rss_bytes () and words0 = heap_words () in
  let sleeping = List.init sleepers (fun _ -> Lwt_unix.sleep 3600.) in
  let rss1 = rss_bytes () and words1 = heap_words () in
  ignore (Sys.opaque_identity sleeping);
  encode
    (per_sleeper ~before:rss0 ~after:rss1)
    (per_sleeper ~before:words0 ~after:words1)

(* The floor under any fiber of OCaml 5: [sleepers] bare effect-handler
   fibers, each suspended on an effect whose continuation is kept, and
   nothing else (no scheduler, no timer). Its RSS per fiber is mostly the
   runtime's first stack (64 words, with its header and handler: a 624-byte
   malloc chunk). *)
type _ Effect.t += Park : unit Effect.t
type parked = Parked : (unit, unit) Effect.Deep.continuation -> parked

let bare_memory () =
  let parked = ref [] in
  let handler =
    {
      Effect.Deep.retc = Fun.id;
      exnc = raise;
      effc =
        (fun (type a) (e : a Effect.t) ->
          match e with
          | Park ->
              Some
                (fun (k : (a, unit) Effect.Deep.continuation) ->
                  parked := Parked k :: !parked)
          | _ -> None);
    }
  in
  let rss0 = rss_bytes () and words0 = heap_words () in
  for _ = 1 to sleepers do
    Effect.Deep.match_with Effect.perform Park handler
  done;
  let rss1 = rss_bytes () and words1 = heap_words () in
  ignore (Sys.opaque_identity !parked);
  encode
    (per_sleeper ~before:rss0 ~after:rss1)
    (per_sleeper ~before:words0 ~after:words1)

(* Wake-up: all sleepers share a deadline [delay] after they were created. *)

let braid_timing ~delay () =
  let open Braid_io in
  run @@ fun () ->
  let woke = ref 0 and last_woke = ref 0. in
  let t0 = now_s () in
  let deadline_s = t0 +. delay in
  let deadline =
    Option.get
      (Mtime.add_span (Time.now ())
         (Mtime.Span.of_uint64_ns (Int64.of_float (delay *. 1e9))))
  in
  let asleep = ref 0. in
  Switch.run (fun sw ->
      for _ = 1 to sleepers do
        ignore
          (Fiber.fork ~sw (fun () ->
               Time.sleep_until deadline;
               incr woke;
               if !woke = sleepers then last_woke := now_s ()))
      done;
      Fiber.yield ();
      asleep := now_s ());
  if !asleep > deadline_s then failwith "timers: deadline too close";
  encode
    ((!asleep -. t0) *. 1e6 /. float sleepers)
    ((!last_woke -. deadline_s) *. 1e3)

let lwt_timing ~delay () =
  let open Lwt.Syntax in
  let woke = ref 0 and last_woke = ref 0. in
  let t0 = now_s () in
  let deadline_s = t0 +. delay in
  let all =
    List.init sleepers (fun _ ->
        let* () = Lwt_unix.sleep (deadline_s -. now_s ()) in
        incr woke;
        if !woke = sleepers then last_woke := now_s ();
        Lwt.return_unit)
  in
  let asleep = now_s () in
  if asleep > deadline_s then failwith "timers: deadline too close";
  Lwt_main.run (Lwt.join all);
  encode
    ((asleep -. t0) *. 1e6 /. float sleepers)
    ((!last_woke -. deadline_s) *. 1e3)

let in_child ~lwt f = decode (Child.result (Child.run ~lwt f))

let run ~quick =
  let rounds = if quick then 1 else 5 and delay = 1.0 in
  let results =
    List.init rounds (fun i ->
        progress "  round %d/%d" (i + 1) rounds;
        let braid_mem = in_child ~lwt:false braid_memory in
        let lwt_mem = in_child ~lwt:true lwt_memory in
        let bare_mem = in_child ~lwt:false bare_memory in
        let braid_time = in_child ~lwt:false (braid_timing ~delay) in
        let lwt_time = in_child ~lwt:true (lwt_timing ~delay) in
        let memory (rss_bytes, heap_words) = { rss_bytes; heap_words } in
        let timing (start_us, wake_ms) = { start_us; wake_ms } in
        ( (memory braid_mem, timing braid_time),
          (memory lwt_mem, timing lwt_time),
          memory bare_mem ))
  in
  let med f = median (List.map f results) in
  let b f = med (fun (b, _, _) -> f b) and l f = med (fun (_, l, _) -> f l) in
  let bare f = med (fun (_, _, m) -> f m) in
  let rss (m, _) = m.rss_bytes
  and words (m, _) = m.heap_words
  and start (_, t) = t.start_us
  and wake (_, t) = t.wake_ms in
  [
    row "braid_io fiber" "RSS per sleeper" (b rss) "bytes";
    row "lwt thread" "RSS per sleeper" (l rss) "bytes";
    row "braid_io fiber" "OCaml heap per sleeper" (b words) "words";
    row "lwt thread" "OCaml heap per sleeper" (l words) "words";
    row "bare OCaml fiber (match_with, suspended)" "RSS per sleeper"
      (bare (fun m -> m.rss_bytes))
      "bytes";
    row "bare OCaml fiber (match_with, suspended)" "OCaml heap per sleeper"
      (bare (fun m -> m.heap_words))
      "words";
    row "braid_io fiber" "start one sleeper" (b start) "us";
    row "lwt thread" "start one sleeper" (l start) "us";
    row "braid_io fibers" "deadline to last wake-up" (b wake) "ms";
    row "lwt threads" "deadline to last wake-up" (l wake) "ms";
    ratio "lwt / braid_io (RSS per sleeper)" (l rss /. b rss);
    ratio "lwt / braid_io (deadline to last wake-up)" (l wake /. b wake);
  ]

let experiment =
  {
    name = "timers";
    summary =
      "100,000 concurrent sleepers: memory per fiber (and under a bare OCaml \
       fiber) and time to wake them all, Braid_io vs Lwt_unix";
    run;
  }
