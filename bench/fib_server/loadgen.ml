open Braid_io

type result = {
  offered : float;
  completed : int;
  failed : int;
  duration : float;
  latencies : float array;
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

let run ~port ~path ~rate ~seconds ~timeout =
  Braid_io.run @@ fun () ->
  let total = max 1 (int_of_float (rate *. seconds)) in
  let latencies = ref [] and failed = ref 0 in
  let in_flight = ref 0 and most_in_flight = ref 0 in
  let t0 = Time.now () in
  let last_done = ref 0. in
  Switch.run (fun sw ->
      for i = 0 to total - 1 do
        let due = float_of_int i /. rate in
        let wait = due -. seconds_since t0 in
        if wait > 0. then Time.sleep wait;
        incr in_flight;
        most_in_flight := max !most_in_flight !in_flight;
        ignore
          (Fiber.fork ~sw (fun () ->
               let start = seconds_since t0 in
               (match Time.timeout timeout (fun () -> request ~port ~path) with
               | Some true ->
                   latencies := (seconds_since t0 -. start) :: !latencies
               | Some false | None -> incr failed
               | exception (Net.Error _ | Unix.Unix_error _) -> incr failed);
               decr in_flight;
               last_done := seconds_since t0))
      done);
  let latencies = Array.of_list !latencies in
  Array.sort compare latencies;
  {
    offered = rate;
    completed = Array.length latencies;
    failed = !failed;
    duration = !last_done;
    latencies;
    most_in_flight = !most_in_flight;
  }
