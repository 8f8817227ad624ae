type slice = {
  tid : int;
  ts : float;
  dur : float;
  label : string;
  tip : string;
}

type request = {
  start : float;
  stop : float;
  name : string;
  detail : string;
  id : string;
}

type trace = {
  fibers : slice list;
  waits : slice list;
  gc : slice list;  (** Outermost phases only. *)
  requests : request list;
  tids : int list;
}

open Yojson.Safe.Util

let num j = match j with `Int n -> float_of_int n | `Float f -> f | _ -> 0.
let field name j = try member name j with Type_error _ -> `Null
let str j = match j with `String s -> s | `Int n -> string_of_int n | _ -> ""

let tip_of args =
  match args with
  | `Assoc kvs ->
      String.concat ", "
        (List.map (fun (k, v) -> k ^ ": " ^ Yojson.Safe.to_string v) kvs)
  | _ -> ""

let parse json =
  let events =
    match field "traceEvents" json with
    | `List l -> l
    | _ -> ( match json with `List l -> l | _ -> [])
  in
  let fibers = ref [] and waits = ref [] and gc = ref [] in
  let open_gc =
    Hashtbl.create 8
    (* tid -> depth, since *)
  in
  let open_requests = Hashtbl.create 64 in
  let requests = ref [] and tids = ref [] in
  List.iter
    (fun e ->
      let ph = str (field "ph" e) and cat = str (field "cat" e) in
      let tid = int_of_float (num (field "tid" e))
      and ts = num (field "ts" e) in
      if ph <> "M" && not (List.mem tid !tids) then tids := tid :: !tids;
      let args = field "args" e in
      match (ph, cat) with
      | "X", "fiber" ->
          let request = str (field "request" args) in
          fibers :=
            {
              tid;
              ts;
              dur = num (field "dur" e);
              label =
                (str (field "name" e)
                ^ if request = "" then "" else " [" ^ request ^ "]");
              tip = str (field "name" e) ^ ": " ^ tip_of args;
            }
            :: !fibers
      | "X", "loop" ->
          waits :=
            {
              tid;
              ts;
              dur = num (field "dur" e);
              label = "";
              tip = "wait: " ^ tip_of args;
            }
            :: !waits
      (* A domain parked on a condition variable is idle, not paused. *)
      | ("B" | "E"), "gc" when str (field "name" e) = "domain_condition_wait" ->
          ()
      | "B", "gc" -> (
          match Hashtbl.find_opt open_gc tid with
          | Some (depth, since, name) ->
              Hashtbl.replace open_gc tid (depth + 1, since, name)
          | None -> Hashtbl.replace open_gc tid (1, ts, str (field "name" e)))
      | "E", "gc" -> (
          match Hashtbl.find_opt open_gc tid with
          | Some (1, since, name) ->
              Hashtbl.remove open_gc tid;
              gc :=
                {
                  tid;
                  ts = since;
                  dur = ts -. since;
                  label = name;
                  tip = "GC: " ^ name;
                }
                :: !gc
          | Some (depth, since, name) ->
              Hashtbl.replace open_gc tid (depth - 1, since, name)
          | None -> ())
      | "b", "request" -> Hashtbl.replace open_requests (str (field "id" e)) ts
      | "e", "request" -> (
          let id = str (field "id" e) in
          match Hashtbl.find_opt open_requests id with
          | None -> ()
          | Some start ->
              Hashtbl.remove open_requests id;
              requests :=
                {
                  start;
                  stop = ts;
                  name = str (field "name" e);
                  detail =
                    Printf.sprintf "%s %.2f ms [%s]"
                      (str (field "status" args))
                      ((ts -. start) /. 1000.)
                      id;
                  id;
                }
                :: !requests)
      | _ -> ())
    events;
  {
    fibers = !fibers;
    waits = !waits;
    gc = !gc;
    requests = List.rev !requests;
    tids = List.sort compare !tids;
  }

let escape s =
  let b = Buffer.create (String.length s) in
  String.iter
    (function
      | '<' -> Buffer.add_string b "&lt;"
      | '>' -> Buffer.add_string b "&gt;"
      | '&' -> Buffer.add_string b "&amp;"
      | '"' -> Buffer.add_string b "&quot;"
      | c -> Buffer.add_char b c)
    s;
  Buffer.contents b

(* Requests that overlap in time go on separate rows: each takes the first
   row free at its start. *)
let rows_of requests =
  let ends = ref [||] in
  List.map
    (fun r ->
      let rec find i =
        if i = Array.length !ends then (
          ends := Array.append !ends [| r.stop |];
          i)
        else if !ends.(i) <= r.start then (
          !ends.(i) <- r.stop;
          i)
        else find (i + 1)
      in
      (find 0, r))
    requests

(* A fiber's colour: its number spread around the hue circle. *)
let colour label =
  let h = Hashtbl.hash label mod 360 in
  Printf.sprintf "hsl(%d,55%%,60%%)" h

(* Keeps what overlaps [lo, hi], cut to it. *)
let window t (lo, hi) =
  let cut s =
    if s.ts +. s.dur < lo || s.ts > hi then None
    else
      let ts = max lo s.ts in
      Some { s with ts; dur = min hi (s.ts +. s.dur) -. ts }
  in
  {
    t with
    fibers = List.filter_map cut t.fibers;
    waits = List.filter_map cut t.waits;
    gc = List.filter_map cut t.gc;
    requests =
      List.filter_map
        (fun r ->
          if r.stop < lo || r.start > hi then None
          else Some { r with start = max lo r.start; stop = min hi r.stop })
        t.requests;
  }

(* The request's span, widened by half its length on each side. *)
let around t id =
  match List.find_opt (fun r -> r.id = id) t.requests with
  | None -> Error ("no request " ^ id ^ " in the trace")
  | Some r ->
      let margin = max 50. ((r.stop -. r.start) /. 2.) in
      Ok (window t (r.start -. margin, r.stop +. margin))

let draw ~width t =
  let all =
    List.concat_map
      (fun s -> [ s.ts; s.ts +. s.dur ])
      (t.fibers @ t.waits @ t.gc)
    @ List.concat_map (fun r -> [ r.start; r.stop ]) t.requests
  in
  let t0 = List.fold_left min infinity all
  and t1 = List.fold_left max neg_infinity all in
  let t0, t1 =
    if all = [] then (0., 1.) else (t0, if t1 > t0 then t1 else t0 +. 1.)
  in
  let left = 90. and right = 10. in
  let plot = float_of_int width -. left -. right in
  let x ts = left +. ((ts -. t0) /. (t1 -. t0) *. plot) in
  let w dur = max 0.5 (dur /. (t1 -. t0) *. plot) in
  let rows = rows_of t.requests in
  let request_rows = List.fold_left (fun m (r, _) -> max m (r + 1)) 0 rows in
  let row_h = 18. and lane_h = 36. and top = 24. in
  let lanes_top = top +. (float_of_int request_rows *. row_h) +. 8. in
  let lane_y tid =
    let rec index i = function
      | [] -> 0
      | x :: rest -> if x = tid then i else index (i + 1) rest
    in
    lanes_top +. (float_of_int (index 0 t.tids) *. (lane_h +. 6.))
  in
  let height =
    lanes_top +. (float_of_int (List.length t.tids) *. (lane_h +. 6.)) +. 30.
  in
  let b = Buffer.create 65536 in
  let p fmt = Printf.bprintf b fmt in
  p
    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" \
     font-family=\"sans-serif\" font-size=\"11\">\n"
    width height;
  p "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n";
  p "<text x=\"4\" y=\"14\">requests</text>\n";
  List.iter
    (fun (row, r) ->
      let y = top +. (float_of_int row *. row_h) in
      p
        "<g><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" \
         height=\"%.0f\" fill=\"#9ecae1\" stroke=\"#3182bd\"/>"
        (escape (r.name ^ " " ^ r.detail))
        (x r.start) y
        (w (r.stop -. r.start))
        (row_h -. 3.);
      p "<text x=\"%.1f\" y=\"%.1f\">%s</text></g>\n"
        (x r.start +. 2.)
        (y +. 11.)
        (escape (r.name ^ " " ^ r.detail)))
    rows;
  List.iter
    (fun tid ->
      let y = lane_y tid in
      p "<text x=\"4\" y=\"%.1f\">domain %d</text>\n"
        (y +. (lane_h /. 2.) +. 4.)
        tid;
      p
        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" \
         fill=\"#f4f4f4\"/>\n"
        left y plot lane_h)
    t.tids;
  List.iter
    (fun s ->
      let y = lane_y s.tid in
      p
        "<g><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" \
         height=\"2\" fill=\"#999\"/></g>\n"
        (escape s.tip) (x s.ts)
        (y +. lane_h -. 3.)
        (w s.dur))
    t.waits;
  List.iter
    (fun s ->
      let y = lane_y s.tid in
      let bw = w s.dur in
      p
        "<g><title>%s</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" \
         height=\"%.0f\" fill=\"%s\"/>"
        (escape s.tip) (x s.ts) (y +. 4.) bw (lane_h -. 10.) (colour s.label);
      if bw > 6. *. float_of_int (String.length s.label) then
        p "<text x=\"%.1f\" y=\"%.1f\">%s</text>"
          (x s.ts +. 2.)
          (y +. 20.) (escape s.label);
      p "</g>\n")
    t.fibers;
  List.iter
    (fun s ->
      let y = lane_y s.tid in
      p
        "<g><title>%s</title><rect class=\"gc\" x=\"%.1f\" y=\"%.1f\" \
         width=\"%.1f\" height=\"%.0f\" fill=\"#444\" \
         fill-opacity=\"0.25\"/></g>\n"
        (escape s.tip) (x s.ts) y (w s.dur) lane_h)
    t.gc;
  let axis = height -. 18. in
  p "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
    left axis (left +. plot) axis;
  for i = 0 to 5 do
    let ts = t0 +. (float_of_int i /. 5. *. (t1 -. t0)) in
    p "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.2f ms</text>\n"
      (x ts) (axis +. 13.)
      ((ts -. t0) /. 1000.)
  done;
  p "</svg>\n";
  Buffer.contents b

let svg_of_string ?(width = 1200) ?request text =
  match Yojson.Safe.from_string text with
  | exception Yojson.Json_error msg -> Error ("not a JSON trace: " ^ msg)
  | json -> (
      let t = parse json in
      match request with
      | None -> Ok (draw ~width t)
      | Some id -> Result.map (draw ~width) (around t id))

let svg_of_file ?width ?request path =
  match In_channel.with_open_bin path In_channel.input_all with
  | text -> svg_of_string ?width ?request text
  | exception Sys_error msg -> Error msg
