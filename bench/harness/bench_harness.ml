type row_ = { name : string; metric : string; value : float; unit : string }

type experiment = {
  name : string;
  summary : string;
  run : quick:bool -> row_ list;
}

type row = row_ = {
  name : string;
  metric : string;
  value : float;
  unit : string;
}

let row name metric value unit = { name; metric; value; unit }
let ratio name r = row name "ratio" r "x"

let load_average () =
  match In_channel.with_open_text "/proc/loadavg" In_channel.input_line with
  | Some line -> (
      match String.split_on_char ' ' line with
      | one :: _ -> Option.value (float_of_string_opt one) ~default:nan
      | [] -> nan)
  | None | (exception Sys_error _) -> nan

let load_row moment =
  row "machine" ("load average (1 min) " ^ moment) (load_average ()) ""

let now_s () = Mtime.Span.to_float_ns (Mtime_clock.elapsed ()) /. 1e9

let time_s f =
  let t0 = now_s () in
  f ();
  now_s () -. t0

let median = function
  | [] -> invalid_arg "median: no samples"
  | samples ->
      let a = Array.of_list samples in
      Array.sort compare a;
      let n = Array.length a in
      if n mod 2 = 1 then a.(n / 2) else (a.((n / 2) - 1) +. a.(n / 2)) /. 2.

let repeat_median n measure = median (List.init n (fun _ -> measure ()))

let format_value v =
  if Float.is_integer v && Float.abs v < 1e15 then Printf.sprintf "%.0f" v
  else if Float.abs v >= 100. then Printf.sprintf "%.1f" v
  else if Float.abs v >= 1. then Printf.sprintf "%.3f" v
  else Printf.sprintf "%.4g" v

let print_table title (rows : row list) =
  let width f =
    List.fold_left (fun w (r : row) -> max w (String.length (f r))) 0 rows
  in
  let wn = max 4 (width (fun (r : row) -> r.name))
  and wm = max 6 (width (fun (r : row) -> r.metric)) in
  let wv = max 5 (width (fun (r : row) -> format_value r.value)) in
  Printf.printf "\n== %s ==\n%-*s  %-*s  %*s  %s\n" title wn "name" wm "metric"
    wv "value" "unit";
  List.iter
    (fun (r : row) ->
      Printf.printf "%-*s  %-*s  %*s  %s\n" wn r.name wm r.metric wv
        (format_value r.value) r.unit)
    rows;
  flush stdout

let rec find_root dir =
  if Sys.file_exists (Filename.concat dir "dune-project") then Some dir
  else
    let parent = Filename.dirname dir in
    if parent = dir then None else find_root parent

let results_dir () =
  let root =
    Option.value (find_root (Sys.getcwd ())) ~default:(Sys.getcwd ())
  in
  let dir = Filename.concat (Filename.concat root "bench") "results" in
  if not (Sys.file_exists dir) then Sys.mkdir dir 0o755;
  dir

let json_string s =
  let b = Buffer.create (String.length s + 2) in
  Buffer.add_char b '"';
  String.iter
    (function
      | '"' -> Buffer.add_string b "\\\""
      | '\\' -> Buffer.add_string b "\\\\"
      | '\n' -> Buffer.add_string b "\\n"
      | c when Char.code c < 0x20 ->
          Buffer.add_string b (Printf.sprintf "\\u%04x" (Char.code c))
      | c -> Buffer.add_char b c)
    s;
  Buffer.add_char b '"';
  Buffer.contents b

let json_float v = if Float.is_finite v then Printf.sprintf "%.6g" v else "null"

let write_json ~experiment (rows : row list) =
  let path = Filename.concat (results_dir ()) (experiment ^ ".json") in
  let row_json r =
    Printf.sprintf
      "    {\"name\": %s, \"metric\": %s, \"value\": %s, \"unit\": %s}"
      (json_string r.name) (json_string r.metric) (json_float r.value)
      (json_string r.unit)
  in
  let tmp = path ^ ".tmp" in
  let oc = open_out tmp in
  Printf.fprintf oc
    "{\n\
    \  \"experiment\": %s,\n\
    \  \"ocaml\": %s,\n\
    \  \"cores\": %d,\n\
    \  \"rows\": [\n\
     %s\n\
    \  ]\n\
     }\n"
    (json_string experiment)
    (json_string Sys.ocaml_version)
    (Domain.recommended_domain_count ())
    (String.concat ",\n" (List.map row_json rows));
  close_out oc;
  Sys.rename tmp path;
  path

let progress fmt =
  Printf.kfprintf
    (fun oc ->
      output_char oc '\n';
      flush oc)
    stderr fmt

let failures runs = List.length (List.filter Result.is_error runs)

(* Any failed run fails its cell: a median over the others would hide that
   the server could not take the load. *)
let median_or_failed f runs =
  if failures runs > 0 then nan
  else median (List.map (fun r -> f (Result.get_ok r)) runs)

let failed_row name runs =
  match failures runs with
  | 0 -> []
  | n ->
      [
        row name
          (Printf.sprintf "failed runs (of %d)" (List.length runs))
          (float n) "runs";
      ]

let content_length head =
  List.find_map
    (fun line ->
      match String.index_opt line ':' with
      | Some i
        when String.lowercase_ascii (String.trim (String.sub line 0 i))
             = "content-length" ->
          int_of_string_opt
            (String.trim (String.sub line (i + 1) (String.length line - i - 1)))
      | _ -> None)
    (String.split_on_char '\n' head)
