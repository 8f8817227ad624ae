open Braid_io

type per_path = { path : string; latencies : float array; failed : int }

type result = {
  offered : float;
  window : float;
  completed : int;
  completed_in_window : int;
  failed : int;
  latencies : float array;
  by_path : per_path list;
  most_in_flight : int;
}

let percentile sorted p =
  let n = Array.length sorted in
  if n = 0 then Float.nan
  else sorted.(min (n - 1) (int_of_float (p *. float_of_int n)))

let seconds_since t0 =
  Mtime.Span.to_float_ns (Mtime.span t0 (Time.now ())) /. 1e9

(* One request on a fresh connection; true if the status is 200. *)
let request ~port ~path =
  Switch.run @@ fun sw ->
  let sock = Net.connect ~sw (Net.tcp "127.0.0.1" port) in
  Net.write_string sock
    (Printf.sprintf
       "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" path);
  let buf = Bytes.create 4096 and response = Buffer.create 256 in
  let rec read () =
    let n = Net.read_into sock buf 0 (Bytes.length buf) in
    if n > 0 then (
      Buffer.add_subbytes response buf 0 n;
      read ())
  in
  read ();
  let head = Buffer.contents response in
  String.length head >= 12 && String.sub head 9 3 = "200"

let sorted list =
  let a = Array.of_list list in
  Array.sort compare a;
  a

let run ~port ~paths ~rate ~seconds ~timeout =
  if paths = [||] then invalid_arg "Loadgen.run: no path";
  Braid_io.run @@ fun () ->
  let total = max 1 (int_of_float (rate *. seconds)) in
  let window = float_of_int total /. rate in
  let kinds = Array.length paths in
  (* Per index of [paths]: latencies and failures. *)
  let latencies = Array.make kinds [] and failed = Array.make kinds 0 in
  let in_window = ref 0 in
  let in_flight = ref 0 and most_in_flight = ref 0 in
  let t0 = Time.now () in
  Switch.run (fun sw ->
      for i = 0 to total - 1 do
        let due = float_of_int i /. rate in
        let wait = due -. seconds_since t0 in
        if wait > 0. then Time.sleep wait;
        incr in_flight;
        most_in_flight := max !most_in_flight !in_flight;
        let kind = i mod kinds in
        ignore
          (Fiber.fork ~sw (fun () ->
               let start = seconds_since t0 in
               (match
                  Time.timeout timeout (fun () ->
                      request ~port ~path:paths.(kind))
                with
               | Some true ->
                   let finish = seconds_since t0 in
                   latencies.(kind) <- (finish -. start) :: latencies.(kind);
                   if finish <= window then incr in_window
               | Some false | None -> failed.(kind) <- failed.(kind) + 1
               | exception (Net.Error _ | Unix.Unix_error _) ->
                   failed.(kind) <- failed.(kind) + 1);
               decr in_flight))
      done);
  (* Paths may repeat in [paths] (to weigh the mix): merge by name. *)
  let names = List.sort_uniq compare (Array.to_list paths) in
  let gather name =
    let kinds =
      List.filter (fun k -> paths.(k) = name) (List.init kinds Fun.id)
    in
    {
      path = name;
      latencies = sorted (List.concat_map (fun k -> latencies.(k)) kinds);
      failed = List.fold_left (fun n k -> n + failed.(k)) 0 kinds;
    }
  in
  let by_path = List.map gather names in
  let all = sorted (List.concat (Array.to_list latencies)) in
  {
    offered = rate;
    window;
    completed = Array.length all;
    completed_in_window = !in_window;
    failed = Array.fold_left ( + ) 0 failed;
    latencies = all;
    by_path;
    most_in_flight = !most_in_flight;
  }
