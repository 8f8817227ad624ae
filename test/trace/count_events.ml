(* Counts the events of a running Braid program by kind, for the events per
   request of docs/tracing.md: [count_events.exe DIR PID SECONDS] reads the
   ring of process PID (in DIR, its OCAML_RUNTIME_EVENTS_DIR) for SECONDS,
   what it held already left out, and prints a count per kind.
   scripts/trace-events-per-request.sh runs it on the http benchmark's
   server. Built with the tests, so that it cannot rot; not a test. *)

open Braid_trace

let kind (what : Event.what) =
  match what with
  | Fiber_created _ -> "fiber create"
  | Fiber_running _ -> "fiber run"
  | Fiber_suspended { on = Structure; _ } -> "fiber suspend (a structure)"
  | Fiber_suspended _ -> "fiber suspend (a descriptor, timer, join)"
  | Fiber_cancelled _ -> "fiber cancel"
  | Fiber_finished _ -> "fiber finish"
  | Switch_opened _ -> "switch open"
  | Switch_closed _ -> "switch close"
  | Pool_submitted _ -> "pool submit"
  | Pool_stolen _ -> "pool steal"
  | Pool_running _ -> "pool run"
  | Loop_waiting _ -> "loop sleep"
  | Loop_woken _ -> "loop wake-up"
  | Http_began _ -> "http begin"
  | Http_ended _ -> "http end"
  | Gc_began _ | Gc_ended _ -> "gc phase (begin or end)"
  | Lost _ -> "lost"

let () =
  let dir = Sys.argv.(1)
  and pid = int_of_string Sys.argv.(2)
  and seconds = float_of_string Sys.argv.(3) in
  let recorder =
    match Recorder.of_process ~dir ~pid with
    | Ok r -> r
    | Error e -> failwith ("count_events: " ^ e)
  in
  let before = List.length (Recorder.events recorder) in
  let t0 = Unix.gettimeofday () in
  while Unix.gettimeofday () -. t0 < seconds do
    Unix.sleepf 0.002;
    ignore (Recorder.poll recorder : int)
  done;
  let counts = Hashtbl.create 16 in
  List.iteri
    (fun i (e : Event.t) ->
      if i >= before then
        let k = kind e.what in
        Hashtbl.replace counts k
          (1 + Option.value ~default:0 (Hashtbl.find_opt counts k)))
    (Recorder.events recorder);
  Hashtbl.fold (fun k v acc -> (k, v) :: acc) counts []
  |> List.sort compare
  |> List.iter (fun (k, v) -> Printf.printf "%-45s %d\n" k v)
