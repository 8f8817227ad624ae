(* A standalone run of the full-handshake client against a server started
   by hand, for profiling one server outside the benchmark (strace, perf,
   callgrind): [handshake_load.exe PORT SECONDS [CONNECTIONS [PATH SIZE]]]
   prints what {!Bench_tls.Handshakes.run} saw. *)

let () =
  match Array.to_list Sys.argv with
  | _ :: port :: seconds :: rest ->
      let connections, path, size =
        match rest with
        | [] -> (16, "/1k.bin", 1024)
        | [ c ] -> (int_of_string c, "/1k.bin", 1024)
        | [ c; p; s ] -> (int_of_string c, p, int_of_string s)
        | _ -> failwith "handshake_load: PORT SECONDS [CONNECTIONS [PATH SIZE]]"
      in
      let r =
        Bench_tls.Handshakes.run ~connections ~seconds:(float_of_string seconds)
          ~port:(int_of_string port) ~path ~size
      in
      Printf.printf
        "completed %d errors %d (%s) %.1f handshakes/s client CPU %.2f s\n"
        r.completed r.errors
        (Option.value r.first_error ~default:"-")
        (Bench_tls.Handshakes.handshakes_per_second r)
        r.client_cpu
  | _ ->
      prerr_endline "handshake_load.exe PORT SECONDS [CONNECTIONS [PATH SIZE]]";
      exit 2
