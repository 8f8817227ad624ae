(* Records known_program.exe through BRAID_TRACE, as any Braid program can
   be recorded, and checks its trace: the events of a fork, a wait on a
   promise, a timer and a pool task, and their order. Then renders it. *)

open Yojson.Safe.Util

let record () =
  let file = Filename.temp_file "braid-trace" ".json" in
  let env = Array.append [| "BRAID_TRACE=" ^ file |] (Unix.environment ()) in
  let pid =
    Unix.create_process_env "./known_program.exe" [| "known_program.exe" |] env
      Unix.stdin Unix.stdout Unix.stderr
  in
  (match Unix.waitpid [] pid with
  | _, WEXITED 0 -> ()
  | _ -> Alcotest.fail "known_program.exe failed");
  let text = In_channel.with_open_bin file In_channel.input_all in
  Sys.remove file;
  text

let trace = lazy (record ())

let events () =
  Yojson.Safe.from_string (Lazy.force trace) |> member "traceEvents" |> to_list

let arg name e = e |> member "args" |> member name
let int_arg name e = match arg name e with `Int n -> n | _ -> -1
let str_arg name e = match arg name e with `String s -> s | _ -> ""
let name e = e |> member "name" |> to_string
let ph e = e |> member "ph" |> to_string
let tid e = e |> member "tid" |> to_int

let ts e =
  match member "ts" e with `Float f -> f | `Int n -> float_of_int n | _ -> nan

let find what p =
  match List.find_opt p (events ()) with
  | Some e -> e
  | None -> Alcotest.failf "no %s in the trace" what

let instant n p e = ph e = "i" && name e = n && p e

let before what a b =
  if not (ts a <= ts b) then
    Alcotest.failf "%s: %.3f is after %.3f" what (ts a) (ts b)

let test_events () =
  (* The main fiber forks the sleeper. *)
  let create = find "a fork" (instant "create" (fun _ -> true)) in
  let main = int_arg "parent" create and sleeper = int_arg "fiber" create in
  Alcotest.(check bool) "distinct fibers" true (main <> sleeper && main > 0);
  (* Main waits on the promise (a structure), the sleeper on a timer. *)
  let main_waits =
    find "main's wait on the promise"
      (instant "suspend" (fun e ->
           int_arg "fiber" e = main && str_arg "on" e = "structure"))
  in
  let sleeper_waits =
    find "the sleeper's timer"
      (instant "suspend" (fun e ->
           int_arg "fiber" e = sleeper && str_arg "on" e = "timer"))
  in
  let loop_sleeps =
    find "the loop's sleep" (fun e ->
        ph e = "X" && name e = "wait" && int_arg "timeout_ms" e >= 0)
  in
  let sleeper_ends =
    find "the sleeper's end"
      (instant "finish" (fun e -> int_arg "fiber" e = sleeper))
  in
  let submit =
    find "the pool task's submission"
      (instant "submit" (fun e -> int_arg "submitter" e = main))
  in
  let task = int_arg "task" submit in
  let task_runs =
    find "the pool task's run"
      (instant "run task" (fun e -> int_arg "task" e = task))
  in
  let task_slice =
    find "the task's running stretch" (fun e ->
        ph e = "X" && name e = Printf.sprintf "fiber %d" task)
  in
  let main_ends =
    find "main's end" (instant "finish" (fun e -> int_arg "fiber" e = main))
  in
  before "fork, then main waits" create main_waits;
  before "main waits, then the sleeper sleeps" main_waits sleeper_waits;
  before "the sleeper sleeps, then the loop" sleeper_waits loop_sleeps;
  before "the loop sleeps, then the sleeper ends" loop_sleeps sleeper_ends;
  before "the sleeper fills the promise, then the task is submitted"
    sleeper_ends submit;
  before "submitted, then run" submit task_runs;
  before "the task runs, then main ends" task_runs main_ends;
  Alcotest.(check bool)
    "the task ran on the pool's domain" true
    (tid task_runs <> tid main_ends);
  Alcotest.(check int)
    "its stretch is on that domain" (tid task_runs) (tid task_slice);
  (* Main's stretches: the one before its first wait says what it waited on. *)
  let main_first =
    find "main's first stretch" (fun e ->
        ph e = "X"
        && name e = Printf.sprintf "fiber %d" main
        && str_arg "then" e = "waits on structure")
  in
  before "main ran, then waited" main_first main_waits;
  let sleeper_first =
    find "the sleeper's stretch before its timer" (fun e ->
        ph e = "X"
        && name e = Printf.sprintf "fiber %d" sleeper
        && String.starts_with ~prefix:"waits on timer" (str_arg "then" e))
  in
  ignore sleeper_first

let test_render () =
  match Braid_trace_render.svg_of_string (Lazy.force trace) with
  | Error e -> Alcotest.fail e
  | Ok svg ->
      let has s =
        let n = String.length s in
        let rec go i =
          i + n <= String.length svg && (String.sub svg i n = s || go (i + 1))
        in
        go 0
      in
      Alcotest.(check bool)
        "an SVG" true
        (String.starts_with ~prefix:"<svg" svg);
      Alcotest.(check bool)
        "the loop's domain has a lane" true (has ">domain 0<");
      Alcotest.(check bool)
        "the pool's domain has a lane" true (has ">domain 1<");
      Alcotest.(check bool)
        "a fiber bar says what it waited on" true (has "waits on timer");
      Alcotest.(check bool)
        "the loop's sleep is drawn" true (has "<title>wait: ")

let test_not_a_trace () =
  match Braid_trace_render.svg_of_string "{" with
  | Error _ -> ()
  | Ok _ -> Alcotest.fail "rendered garbage"

let () =
  Alcotest.run "trace"
    [
      ( "known program",
        [
          Alcotest.test_case "events and their order" `Quick test_events;
          Alcotest.test_case "rendered" `Quick test_render;
          Alcotest.test_case "garbage refused" `Quick test_not_a_trace;
        ] );
    ]
