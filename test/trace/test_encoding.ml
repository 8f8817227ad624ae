(* Every probe written and read back in this process: the values come back
   exactly (whole integers, strings cut to 256 bytes), in order, whether
   they fill one buffer or many; records reach the ring only when their
   domain's buffer is flushed, and many records travel as one ring event.
   Two domains write at once, each into its own buffer. *)

module Probe = Braid_trace.Probe
module Event = Braid_trace.Event

let () = Probe.enable ()
let recorder = Braid_trace.Recorder.of_self ()

(* The events of Braid that [f] writes, GC phases left out. *)
let recorded f =
  ignore (Braid_trace.Recorder.poll recorder : int);
  let before = List.length (Braid_trace.Recorder.events recorder) in
  f ();
  Probe.flush ();
  ignore (Braid_trace.Recorder.poll recorder : int);
  Braid_trace.Recorder.events recorder
  |> List.filteri (fun i _ -> i >= before)
  |> List.filter_map (fun (e : Event.t) ->
         match e.what with
         | Gc_began _ | Gc_ended _ -> None
         | what -> Some (e.domain, what))

let show (what : Event.what) =
  let on : Probe.waiting_on -> string = function
    | Structure -> "structure"
    | Descriptor -> "descriptor"
    | Timer -> "timer"
    | Join -> "join"
  in
  match what with
  | Fiber_created { child; parent } ->
      Printf.sprintf "create %d %d" child parent
  | Fiber_running f -> Printf.sprintf "run %d" f
  | Fiber_suspended { fiber; on = o; detail } ->
      Printf.sprintf "suspend %d %s %d" fiber (on o) detail
  | Fiber_cancelled f -> Printf.sprintf "cancel %d" f
  | Fiber_finished f -> Printf.sprintf "finish %d" f
  | Switch_opened { switch; fiber } -> Printf.sprintf "open %d %d" switch fiber
  | Switch_closed s -> Printf.sprintf "close %d" s
  | Pool_submitted { task; submitter } ->
      Printf.sprintf "submit %d %d" task submitter
  | Pool_stolen { thief; victim } -> Printf.sprintf "steal %d %d" thief victim
  | Pool_running t -> Printf.sprintf "run task %d" t
  | Loop_waiting { timeout_ms } -> Printf.sprintf "wait %d" timeout_ms
  | Loop_woken { events } -> Printf.sprintf "woken %d" events
  | Http_began { fiber; meth; path; request_id } ->
      Printf.sprintf "begin %d %s %s %s" fiber meth path request_id
  | Http_ended { fiber; status; bytes } ->
      Printf.sprintf "end %d %d %d" fiber status bytes
  | Gc_began p -> "gc " ^ p
  | Gc_ended p -> "gc end " ^ p
  | Lost n -> Printf.sprintf "lost %d" n

let check_events name f expected =
  let got = recorded f |> List.map (fun (_, what) -> show what) in
  Alcotest.(check (list string)) name expected got

let biggest = (1 lsl 31) - 1
let smallest = -(1 lsl 31)

let fiber_events () =
  check_events "fibers"
    (fun () ->
      Probe.fiber_created ~child:5 ~parent:3;
      Probe.fiber_created ~child:biggest ~parent:smallest;
      Probe.fiber_created ~child:(biggest + 1) ~parent:3;
      Probe.fiber_created ~child:5 ~parent:(smallest - 1);
      Probe.fiber_running 5;
      Probe.fiber_running (-7);
      Probe.fiber_running (1 lsl 40);
      Probe.fiber_cancelled 5;
      Probe.fiber_finished 5;
      Probe.fiber_finished max_int;
      Probe.fiber_finished min_int)
    [
      "create 5 3";
      Printf.sprintf "create %d %d" biggest smallest;
      Printf.sprintf "create %d 3" (biggest + 1);
      Printf.sprintf "create 5 %d" (smallest - 1);
      "run 5";
      "run -7";
      Printf.sprintf "run %d" (1 lsl 40);
      "cancel 5";
      "finish 5";
      Printf.sprintf "finish %d" max_int;
      Printf.sprintf "finish %d" min_int;
    ]

let waits () =
  let deadline = 1 lsl 45 in
  check_events "suspensions and what they wait on"
    (fun () ->
      Probe.fiber_suspended 4;
      Probe.waiting_on_descriptor Unix.stdin;
      Probe.fiber_suspended 4;
      Probe.waiting_on_timer ~deadline_ns:deadline;
      Probe.fiber_suspended 4;
      Probe.waiting_on_timer ~deadline_ns:1000;
      Probe.fiber_suspended (1 lsl 33);
      Probe.waiting_on_join 9;
      Probe.fiber_suspended 4;
      (* A wait is for the next suspension only. *)
      Probe.fiber_suspended 4)
    [
      "suspend 4 structure 0";
      "suspend 4 descriptor 0";
      Printf.sprintf "suspend 4 timer %d" deadline;
      Printf.sprintf "suspend %d timer 1000" (1 lsl 33);
      "suspend 4 join 9";
      "suspend 4 structure 0";
    ]

let others () =
  let long_path = "/" ^ String.make 2000 'p' in
  check_events "switches, pool, loop, requests"
    (fun () ->
      Probe.switch_opened ~switch:1 ~fiber:(-3);
      Probe.switch_closed ~switch:1;
      Probe.pool_submitted ~task:11 ~submitter:0;
      Probe.pool_stolen ~thief:1 ~victim:0;
      Probe.pool_running ~task:11;
      Probe.loop_waiting ~timeout_ms:(-1);
      Probe.loop_woken_by ~events:3;
      Probe.http_began ~fiber:6 ~meth:"GET" ~path:"/a" ~request_id:"abc";
      Probe.http_ended ~fiber:6 ~status:200 ~bytes:1024;
      Probe.http_ended ~fiber:6 ~status:1023 ~bytes:((1 lsl 21) - 1);
      Probe.http_ended ~fiber:6 ~status:200 ~bytes:(1 lsl 21);
      Probe.http_ended ~fiber:6 ~status:1024 ~bytes:0;
      Probe.http_ended ~fiber:(1 lsl 31) ~status:404 ~bytes:7)
    [
      "open 1 -3";
      "close 1";
      "submit 11 0";
      "steal 1 0";
      "run task 11";
      "wait -1";
      "woken 3";
      "begin 6 GET /a abc";
      "end 6 200 1024";
      Printf.sprintf "end 6 1023 %d" ((1 lsl 21) - 1);
      Printf.sprintf "end 6 200 %d" (1 lsl 21);
      "end 6 1024 0";
      Printf.sprintf "end %d 404 7" (1 lsl 31);
    ];
  (* Strings are cut to 256 bytes, not lost. *)
  match
    recorded (fun () ->
        Probe.http_began ~fiber:6 ~meth:"GET" ~path:long_path ~request_id:"id")
  with
  | [ (_, Http_began { path; meth = "GET"; _ }) ] ->
      Alcotest.(check bool)
        "a long path's start is kept" true
        (String.length path = 256 && String.starts_with ~prefix:path long_path)
  | _ -> Alcotest.fail "no http.begin for a long path"

(* Records wait in the domain's buffer until it is flushed, then travel
   together: fifty records are one ring event (give or take the runtime's
   own, should a collection come between), and all of them are read. *)
let batching () =
  ignore (Braid_trace.Recorder.poll recorder : int);
  let before = List.length (Braid_trace.Recorder.events recorder) in
  let fibers = List.init 50 (fun i -> i + 100) in
  List.iter Probe.fiber_running fibers;
  let unflushed = Braid_trace.Recorder.poll recorder in
  let runs () =
    Braid_trace.Recorder.events recorder
    |> List.filteri (fun i _ -> i >= before)
    |> List.filter_map (fun (e : Event.t) ->
           match e.what with Fiber_running f -> Some f | _ -> None)
  in
  Alcotest.(check (list int)) "nothing before the flush" [] (runs ());
  Probe.flush ();
  let ring_events = Braid_trace.Recorder.poll recorder in
  Alcotest.(check (list int)) "all after it, in order" fibers (runs ());
  if unflushed + ring_events > 10 then
    Alcotest.failf "%d ring events for 50 records" (unflushed + ring_events)

(* A FIFO scheduler's domain with nothing to run sleeps; what it recorded
   reaches the ring before it does (not only when its buffer fills or the
   domain ends), as the IO loop's and the pool's records do. *)
let fifo_flushes_before_sleeping () =
  ignore (Braid_trace.Recorder.poll recorder : int);
  let before = List.length (Braid_trace.Recorder.events recorder) in
  let marker = 424242 in
  let go = Braid_sync.Promise.create () in
  let domain =
    Domain.spawn (fun () ->
        Braid_fifo.run (fun () ->
            Probe.fiber_running marker;
            Braid_sync.Promise.await go))
  in
  let seen () =
    ignore (Braid_trace.Recorder.poll recorder : int);
    Braid_trace.Recorder.events recorder
    |> List.filteri (fun i _ -> i >= before)
    |> List.exists (fun (e : Event.t) -> e.what = Fiber_running marker)
  in
  (* Polling the ring until the record shows, 10 s at most: the domain is
     asleep on the promise the whole time, until it is filled below. *)
  let deadline = Unix.gettimeofday () +. 10. in
  let rec wait () =
    if seen () then true
    else if Unix.gettimeofday () > deadline then false
    else (
      Unix.sleepf 0.01;
      wait ())
  in
  let shown = wait () in
  Braid_sync.Promise.fill go ();
  Domain.join domain;
  if not shown then
    Alcotest.fail "the sleeping FIFO domain's record was not in the ring"

(* More records than a buffer holds: it is flushed when full, and nothing
   is lost or reordered across the flushes. *)
let many () =
  let n = 5000 in
  let events =
    recorded (fun () ->
        for i = 1 to n do
          Probe.http_ended ~fiber:i ~status:200 ~bytes:(i * 1000)
        done)
  in
  let ends =
    List.filter_map
      (fun (_, (what : Event.what)) ->
        match what with
        | Http_ended { fiber; status = 200; bytes } when bytes = fiber * 1000 ->
            Some fiber
        | _ -> None)
      events
  in
  Alcotest.(check (list int)) "every record" (List.init n succ) ends

(* Each domain writes pairs whose values say which domain and which pair:
   records of one domain's buffer mixed into the other's would show. *)
let two_domains () =
  let pairs = 2000 in
  let write base () =
    for i = 1 to pairs do
      Probe.fiber_created ~child:(base + i) ~parent:(base + i + 1_000_000)
    done
  in
  let events =
    recorded (fun () ->
        let other = Domain.spawn (write 10_000_000) in
        write 20_000_000 ();
        Domain.join other)
  in
  let creations =
    List.filter_map
      (fun (_, (what : Event.what)) ->
        match what with
        | Fiber_created { child; parent } -> Some (child, parent)
        | _ -> None)
      events
  in
  Alcotest.(check int) "every pair read" (2 * pairs) (List.length creations);
  List.iter
    (fun (child, parent) ->
      if parent <> child + 1_000_000 then
        Alcotest.failf "child %d joined to parent %d" child parent)
    creations

(* Domains one after another take the same index, and so the same buffer:
   each attaches it afresh and flushes it at its exit, so every record is
   read once. *)
let reused_index () =
  let per_domain = 300 and domains = 3 in
  let events =
    recorded (fun () ->
        for d = 1 to domains do
          Domain.join
            (Domain.spawn (fun () ->
                 for i = 1 to per_domain do
                   Probe.fiber_finished ((d * 1000) + i)
                 done))
        done)
  in
  let finished =
    List.filter_map
      (fun (_, (what : Event.what)) ->
        match what with Fiber_finished f -> Some f | _ -> None)
      events
  in
  let expected =
    List.concat_map
      (fun d -> List.init per_domain (fun i -> (d * 1000) + i + 1))
      (List.init domains succ)
  in
  Alcotest.(check (list int)) "each record once" expected finished

(* A domain's first probes may be notes, not records (a wait, a loop going
   to sleep): they are kept all the same. A wake-up without its sleep is
   not a sleep. *)
let first_notes () =
  let events =
    recorded (fun () ->
        Domain.join
          (Domain.spawn (fun () ->
               Probe.waiting_on_timer ~deadline_ns:77;
               Probe.fiber_suspended 5;
               Probe.loop_woken_by ~events:1;
               Probe.loop_waiting ~timeout_ms:10;
               Probe.loop_woken_by ~events:2));
        Domain.join
          (Domain.spawn (fun () ->
               Probe.loop_waiting ~timeout_ms:20;
               Probe.loop_woken_by ~events:3)))
  in
  Alcotest.(check (list string))
    "every note kept"
    [ "suspend 5 timer 77"; "wait 10"; "woken 2"; "wait 20"; "woken 3" ]
    (List.map (fun (_, what) -> show what) events)

let () =
  Alcotest.run "trace encoding"
    [
      ( "round trip",
        [
          Alcotest.test_case "fibers" `Quick fiber_events;
          Alcotest.test_case "waits" `Quick waits;
          Alcotest.test_case "switches, pool, loop, http" `Quick others;
          Alcotest.test_case "batched until flushed" `Quick batching;
          Alcotest.test_case "many buffers" `Quick many;
          Alcotest.test_case "a buffer per domain" `Quick two_domains;
          Alcotest.test_case "a domain's index reused" `Quick reused_index;
          Alcotest.test_case "a domain's first notes" `Quick first_notes;
          Alcotest.test_case "a FIFO domain flushes before it sleeps" `Quick
            fifo_flushes_before_sleeping;
        ] );
    ]
