(* 100,000 sleepers sharing one deadline. Each peer runs in a fresh forked
   process: RSS does not shrink after a run, so sharing a process would
   charge one peer for the other's memory. Fiber stacks live outside the
   OCaml heap, hence RSS next to heap words. *)

open Bench_harness

let sleepers = 100_000

type result = {
  rss_bytes : float;  (** Per sleeper. *)
  heap_words : float;  (** Per sleeper. *)
  start_us : float;  (** Per sleeper: creating it until it sleeps. *)
  wake_ms : float;  (** From the deadline until the last one woke. *)
}

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

let encode r =
  Printf.sprintf "%h %h %h %h" r.rss_bytes r.heap_words r.start_us r.wake_ms

let decode s =
  Scanf.sscanf s "%h %h %h %h" (fun rss_bytes heap_words start_us wake_ms ->
      { rss_bytes; heap_words; start_us; wake_ms })

(* The deadline leaves time to start every sleeper and to measure memory. *)
let per_sleeper ~before ~after = (after -. before) /. float sleepers

let braid ~delay () =
  let open Braid_io in
  run @@ fun () ->
  let woke = ref 0 and last_woke = ref 0. in
  let rss0 = rss_bytes () and words0 = heap_words () in
  let t0 = now_s () in
  let deadline_s = t0 +. delay in
  let deadline =
    Mtime.add_span (Time.now ())
      (Mtime.Span.of_uint64_ns (Int64.of_float (delay *. 1e9)))
    |> Option.get
  in
  let result = ref None in
  Switch.run (fun sw ->
      for _ = 1 to sleepers do
        ignore
          (Fiber.fork ~sw (fun () ->
               Time.sleep_until deadline;
               incr woke;
               if !woke = sleepers then last_woke := now_s ()))
      done;
      (* Every fiber forked so far runs before this one resumes. *)
      Fiber.yield ();
      let started = now_s () in
      let rss1 = rss_bytes () and words1 = heap_words () in
      if now_s () > deadline_s then failwith "timers: deadline too close";
      result :=
        Some
          (fun () ->
            {
              rss_bytes = per_sleeper ~before:rss0 ~after:rss1;
              heap_words = per_sleeper ~before:words0 ~after:words1;
              start_us = (started -. t0) *. 1e6 /. float sleepers;
              wake_ms = (!last_woke -. deadline_s) *. 1e3;
            }));
  encode ((Option.get !result) ())

let lwt ~delay () =
  let open Lwt.Syntax in
  let woke = ref 0 and last_woke = ref 0. in
  let rss0 = rss_bytes () and words0 = heap_words () in
  let t0 = now_s () in
  let deadline_s = t0 +. delay in
  let sleepers_done =
    List.init sleepers (fun _ ->
        let* () = Lwt_unix.sleep (deadline_s -. now_s ()) in
        incr woke;
        if !woke = sleepers then last_woke := now_s ();
        Lwt.return_unit)
  in
  let started = now_s () in
  let rss1 = rss_bytes () and words1 = heap_words () in
  if now_s () > deadline_s then failwith "timers: deadline too close";
  Lwt_main.run (Lwt.join sleepers_done);
  encode
    {
      rss_bytes = per_sleeper ~before:rss0 ~after:rss1;
      heap_words = per_sleeper ~before:words0 ~after:words1;
      start_us = (started -. t0) *. 1e6 /. float sleepers;
      wake_ms = (!last_woke -. deadline_s) *. 1e3;
    }

let measure ~lwt:use_lwt f = decode (Child.result (Child.run ~lwt:use_lwt f))

let run ~quick =
  let rounds = if quick then 1 else 5 and delay = 2.0 in
  let braid_runs = ref [] and lwt_runs = ref [] in
  for round = 1 to rounds do
    progress "  round %d/%d: braid_io fibers" round rounds;
    braid_runs := measure ~lwt:false (braid ~delay) :: !braid_runs;
    progress "  round %d/%d: lwt threads" round rounds;
    lwt_runs := measure ~lwt:true (lwt ~delay) :: !lwt_runs
  done;
  let med f runs = median (List.map f runs) in
  let b f = med f !braid_runs and l f = med f !lwt_runs in
  let rss r = r.rss_bytes
  and words r = r.heap_words
  and start r = r.start_us
  and wake r = r.wake_ms in
  [
    row "braid_io fiber" "RSS per sleeper" (b rss) "bytes";
    row "lwt thread" "RSS per sleeper" (l rss) "bytes";
    row "braid_io fiber" "OCaml heap per sleeper" (b words) "words";
    row "lwt thread" "OCaml heap per sleeper" (l words) "words";
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
      "100,000 concurrent sleepers: memory per fiber and time to wake them \
       all, Braid_io vs Lwt_unix";
    run;
  }
