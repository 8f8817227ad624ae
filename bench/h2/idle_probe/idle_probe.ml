(* [idle_probe.exe PORT PID COUNT]: as the h2 benchmark measures RSS per
   idle h2c connection (warm-up connections closed, a wait, then COUNT idle
   connections and another wait), against the server at 127.0.0.1:PORT
   whose process is PID. Prints bytes per connection. *)

let rss pid =
  let ic = open_in (Printf.sprintf "/proc/%d/status" pid) in
  let rec find () =
    match input_line ic with
    | line when String.starts_with ~prefix:"VmRSS:" line ->
        Scanf.sscanf line "VmRSS: %d kB" (fun kb -> kb * 1024)
    | _ -> find ()
  in
  Fun.protect ~finally:(fun () -> close_in ic) find

let () =
  let port = int_of_string Sys.argv.(1)
  and pid = int_of_string Sys.argv.(2)
  and count = int_of_string Sys.argv.(3) in
  let path = "/1k.txt" in
  Idle_h2.close (Idle_h2.open_idle ~port ~path ~count:(count / 5));
  Unix.sleepf 2.5;
  let before = rss pid in
  let clients = Idle_h2.open_idle ~port ~path ~count in
  Unix.sleepf 2.5;
  let after = rss pid in
  let closed = Idle_h2.closed_by_server clients in
  Idle_h2.close clients;
  Printf.printf "%d idle h2c connections: %.0f bytes each (%d closed)\n" count
    (float (after - before) /. float count)
    closed
