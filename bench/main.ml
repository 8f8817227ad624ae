(* The one entry point for every benchmark:
     dune exec --profile release -- bench/main.exe NAME... [--quick]
   Each experiment prints a table and writes bench/results/NAME.json. *)

open Bench_harness

let experiments : experiment list =
  [
    Bench_core.producer_consumer;
    Bench_core.cancellation_cost;
    Bench_error_handling.experiment;
    Bench_parser.experiment;
    Bench_pool.fib;
    Bench_pool.pool_overhead;
    Bench_lwt.experiment;
    Bench_file_io.experiment;
    Bench_server.http;
    Bench_server.reverse_post;
    Bench_io.echo;
    Bench_io.timers;
    Bench_io.wake;
    Bench_fib_server.experiment;
    Bench_conn_rate.experiment;
    Bench_scale.experiment;
    Bench_static.experiment;
    Bench_tls.experiment;
    Bench_websocket.experiment;
    Bench_web.experiment;
    Bench_proxy.client;
    Bench_proxy.proxy;
    Bench_h2.experiment;
    Bench_hpack.experiment;
  ]

let run_one ~quick (e : experiment) =
  progress "bench: %s%s" e.name (if quick then " (quick)" else "");
  let rows = e.run ~quick in
  print_table e.name rows;
  let path = write_json ~experiment:e.name rows in
  progress "bench: wrote %s" path

let report () = progress "bench: wrote %s" (Bench_report.render ())

let run_names names quick =
  match names with
  | [ "report" ] ->
      report ();
      `Ok ()
  | [ "list" ] ->
      List.iter
        (fun (e : experiment) -> Printf.printf "%-20s %s\n" e.name e.summary)
        experiments;
      `Ok ()
  | _ -> (
      let wanted =
        if names = [] || names = [ "all" ] then
          List.map (fun (e : experiment) -> e.name) experiments
        else names
      in
      match
        List.filter
          (fun n ->
            not (List.exists (fun (e : experiment) -> e.name = n) experiments))
          wanted
      with
      | [] ->
          List.iter
            (fun n ->
              run_one ~quick
                (List.find (fun (e : experiment) -> e.name = n) experiments))
            wanted;
          report ();
          `Ok ()
      | unknown ->
          `Error
            ( false,
              "unknown experiment(s): " ^ String.concat ", " unknown
              ^ " (try `list`)" ))

(* Interrupted (Ctrl-C, or SIGTERM), an experiment unwinds through its
   Fun.protect and stops the servers it started instead of leaving them
   running. *)
let main names quick =
  Sys.catch_break true;
  Sys.set_signal Sys.sigterm (Sys.Signal_handle (fun _ -> raise Sys.Break));
  match run_names names quick with
  | result -> result
  | exception Sys.Break ->
      prerr_endline "bench: interrupted; the servers it started are stopped";
      exit 130

(* Server roles: each experiment's module claimed its own at initialisation;
   this one's run here. *)
let () =
  Bench_fib_server.dispatch ();
  Bench_web.dispatch ();
  Bench_proxy.dispatch ();
  Option.iter
    (fun role ->
      prerr_endline ("bench: unknown server role " ^ role);
      exit 2)
    (Sys.getenv_opt "BRAID_BENCH_ROLE")

let () =
  let open Cmdliner in
  let names =
    Arg.(
      value & pos_all string []
      & info [] ~docv:"NAME"
          ~doc:
            "Experiments to run: names from $(b,list), or $(b,all) (the \
             default). $(b,report) only renders docs/benchmarks.md from the \
             results already in bench/results.")
  in
  let quick =
    Arg.(
      value & flag
      & info [ "quick" ]
          ~doc:"Smaller sizes: each experiment finishes in well under a minute.")
  in
  let doc = "run Braid's benchmarks and write bench/results/NAME.json" in
  let man =
    [
      `S Manpage.s_description;
      `P
        "$(b,list) prints the experiments. Each experiment measures Braid next \
         to its peers in the same run and reports ratios; absolute times are \
         machine-dependent.";
      `P
        "After a run, docs/benchmarks.md and its charts (docs/bench/NAME.svg) \
         are rendered again from every file in bench/results.";
    ]
  in
  exit
    (Cmd.eval
       (Cmd.v
          (Cmd.info "bench" ~doc ~man)
          Term.(ret (const main $ names $ quick))))
