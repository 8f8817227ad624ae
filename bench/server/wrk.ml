type result = {
  requests : int;
  requests_per_second : float;
  p50_ms : float;
  p99_ms : float;
  errors : int;
}

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
  let requests =
    find_map (function
      | n :: "requests" :: "in" :: _ -> int_of_string_opt n
      | _ -> None)
  in
  (* "Socket errors: connect 0, read 0, write 0, timeout 0" *)
  let count s = Option.value ~default:0 (int_of_string_opt s) in
  let socket_errors =
    find_map (function
      | [
          "Socket"; "errors:"; "connect"; c; "read"; r; "write"; w; "timeout"; t;
        ] ->
          let n s = count (String.concat "" (String.split_on_char ',' s)) in
          Some (n c + n r + n w + n t)
      | _ -> None)
  in
  let bad_statuses =
    find_map (function
      | [ "Non-2xx"; "or"; "3xx"; "responses:"; n ] -> Some (count n)
      | _ -> None)
  in
  let errors =
    Option.value ~default:0 socket_errors + Option.value ~default:0 bad_statuses
  in
  match (requests, rps, percentile "50%", percentile "99%") with
  | Some requests, Some requests_per_second, Some p50_ms, Some p99_ms ->
      { requests; requests_per_second; p50_ms; p99_ms; errors }
  | _ -> failwith ("cannot read wrk's report:\n" ^ report)

let run_observed ~cpu ~connections ~seconds url ~observe =
  let cmd =
    Printf.sprintf "taskset -c %d wrk -t1 -c%d -d%ds --latency %s 2>&1" cpu
      connections seconds (Filename.quote url)
  in
  let ic = Unix.open_process_in cmd in
  let observed =
    match observe () with
    | v -> v
    | exception e ->
        (* wrk runs to its end: wait for it rather than leave it. *)
        ignore (In_channel.input_all ic);
        ignore (Unix.close_process_in ic);
        raise e
  in
  let report = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 ->
      let r = parse report in
      if r.errors > 0 then
        failwith
          (Printf.sprintf "wrk saw %d errors on %s: a failed run\n%s" r.errors
             url report)
      else (r, observed)
  | _ -> failwith ("wrk failed:\n" ^ report)

let run ~cpu ~connections ~seconds url =
  fst (run_observed ~cpu ~connections ~seconds url ~observe:ignore)
