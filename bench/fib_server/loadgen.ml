open Braid_io

type per_path = { path : string; latencies : float array; failed : int }

type result = {
  offered : float;
  window : float;
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
  (* Paths may repeat in [paths] (to weigh the mix): figures are kept per
     distinct path. *)
  let names = Array.of_list (List.sort_uniq compare (Array.to_list paths)) in
  let slot_of path =
    let rec find i = if names.(i) = path then i else find (i + 1) in
    find 0
  in
  let slots = Array.map slot_of paths in
  let latencies = Array.make (Array.length names) []
  and failed = Array.make (Array.length names) 0 in
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
        let slot = slots.(i mod Array.length paths) in
        ignore
          (Fiber.fork ~sw (fun () ->
               let start = seconds_since t0 in
               (match
                  Time.timeout timeout (fun () ->
                      request ~port ~path:names.(slot))
                with
               | Some true ->
                   let finish = seconds_since t0 in
                   latencies.(slot) <- (finish -. start) :: latencies.(slot);
                   if finish <= window then incr in_window
               | Some false | None -> failed.(slot) <- failed.(slot) + 1
               | exception (Braid_io.Io_error _ | Unix.Unix_error _) ->
                   failed.(slot) <- failed.(slot) + 1);
               decr in_flight))
      done);
  let by_path =
    List.init (Array.length names) (fun i ->
        {
          path = names.(i);
          latencies = sorted latencies.(i);
          failed = failed.(i);
        })
  in
  let all = sorted (List.concat (Array.to_list latencies)) in
  {
    offered = rate;
    window;
    completed_in_window = !in_window;
    failed = Array.fold_left ( + ) 0 failed;
    latencies = all;
    by_path;
    most_in_flight = !most_in_flight;
  }
