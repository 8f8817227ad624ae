type result = { succeeded : int; requests_per_second : float }

let words line =
  List.filter (( <> ) "")
    (String.split_on_char ' '
       (String.map (function ',' -> ' ' | c -> c) (String.trim line)))

(* "finished in 2.00s, 51234.50 req/s, 54.12MB/s"
   "requests: 102469 total, 102569 started, 102469 done, 102469 succeeded,
    0 failed, 0 errored, 0 timeout"
   "status codes: 102469 2xx, 0 3xx, 0 4xx, 0 5xx" *)
let parse report =
  let lines = String.split_on_char '\n' report in
  let find_map f = List.find_map (fun l -> f (words l)) lines in
  let rps =
    find_map (function
      | "finished" :: "in" :: _ :: v :: "req/s" :: _ -> float_of_string_opt v
      | _ -> None)
  in
  let requests =
    find_map (function
      | [
          "requests:";
          _total;
          "total";
          _started;
          "started";
          _done;
          "done";
          ok;
          "succeeded";
          failed;
          "failed";
          errored;
          "errored";
          timeout;
          "timeout";
        ] -> (
          match List.map int_of_string_opt [ ok; failed; errored; timeout ] with
          | [ Some ok; Some failed; Some errored; Some timeout ] ->
              Some (ok, failed + errored + timeout)
          | _ -> None)
      | _ -> None)
  in
  let statuses =
    find_map (function
      | [ "status"; "codes:"; ok; "2xx"; c3; "3xx"; c4; "4xx"; c5; "5xx" ] -> (
          match List.map int_of_string_opt [ ok; c3; c4; c5 ] with
          | [ Some ok; Some c3; Some c4; Some c5 ] -> Some (ok, c3 + c4 + c5)
          | _ -> None)
      | _ -> None)
  in
  match (rps, requests, statuses) with
  | Some requests_per_second, Some (succeeded, 0), Some (ok, 0)
    when succeeded > 0 && ok >= succeeded ->
      Ok { succeeded = ok; requests_per_second }
  | Some _, Some _, Some _ ->
      Error ("h2load saw errors or non-2xx responses:\n" ^ report)
  | _ -> Error ("h2load's report not understood:\n" ^ report)

let run ~cpu ~connections ~streams ~requests url =
  let argv =
    [
      "taskset";
      "-c";
      string_of_int cpu;
      "h2load";
      "-t";
      "1";
      "-c";
      string_of_int connections;
      "-m";
      string_of_int streams;
      "-n";
      string_of_int requests;
      url;
    ]
  in
  let command = String.concat " " (List.map Filename.quote argv) ^ " 2>&1" in
  let ic = Unix.open_process_in command in
  let report = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 -> parse report
  | _ -> Error ("h2load failed:\n" ^ report)
