type result = { requests_per_second : float; p50_ms : float; p99_ms : float }

let words line =
  List.filter (( <> ) "") (String.split_on_char ' ' (String.trim line))

let duration_ms s =
  let num suffix scale =
    let n = String.length s - String.length suffix in
    Option.map (fun v -> v *. scale) (float_of_string_opt (String.sub s 0 n))
  in
  let ends suffix = String.ends_with ~suffix s in
  if ends "us" then num "us" 1e-3
  else if ends "ms" then num "ms" 1.
  else if ends "m" then num "m" 60_000.
  else if ends "s" then num "s" 1000.
  else None

let parse report =
  let lines = String.split_on_char '\n' report in
  let find_map f = List.find_map (fun l -> f (words l)) lines in
  let rps =
    find_map (function
      | [ "Requests/sec:"; v ] -> float_of_string_opt v
      | _ -> None)
  in
  let percentile p =
    find_map (function [ q; v ] when q = p -> duration_ms v | _ -> None)
  in
  match (rps, percentile "50%", percentile "99%") with
  | Some requests_per_second, Some p50_ms, Some p99_ms ->
      { requests_per_second; p50_ms; p99_ms }
  | _ -> failwith ("cannot read wrk's report:\n" ^ report)

let run ~cpu ~connections ~seconds url =
  let cmd =
    Printf.sprintf "taskset -c %d wrk -t1 -c%d -d%ds --latency %s 2>&1" cpu
      connections seconds (Filename.quote url)
  in
  let ic = Unix.open_process_in cmd in
  let report = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 -> parse report
  | _ -> failwith ("wrk failed:\n" ^ report)
