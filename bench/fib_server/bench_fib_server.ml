open Bench_harness
open Braid_server
open Braid_web

(* fib 34 takes about 30 ms on one core of the development machine. *)
let n = 34
let pool_domains = 2

(* The demo server's own functions: the benchmark measures what
   [braid serve --demo] serves. *)
let sequential = Braid_cli.Demo.sequential_fib
let parallel = Braid_cli.Demo.parallel_fib
let answer v = Response.string (string_of_int v ^ "\n")

(* Blocks the domain until the task is done: the failing version. *)
let naive pool _ =
  let lock = Mutex.create ()
  and ready = Condition.create ()
  and result = ref None in
  ignore
    (Braid_pool.async pool (fun () ->
         let v = parallel pool n in
         Mutex.lock lock;
         result := Some v;
         Condition.signal ready;
         Mutex.unlock lock));
  Mutex.lock lock;
  while Option.is_none !result do
    Condition.wait ready lock
  done;
  Mutex.unlock lock;
  answer (Option.get !result)

(* One computation at a time, later requests waiting in the semaphore's
   arrival order: the naive variant's schedule (each computation already
   spreads over the pool's domains), without its stalled event loop. Two at
   a time share the cores and make both late: in full runs, fib-only p90 at
   capacity was 1.35x the naive server's with two, 1.02x with one. *)
let composed pool admission _ =
  Braid_sync.Semaphore.acquire admission;
  Fun.protect
    ~finally:(fun () -> Braid_sync.Semaphore.release admission)
    (fun () ->
      answer
        (Braid_sync.Promise.await
           (Braid_pool.async pool (fun () -> parallel pool n))))

let domain_manager _ =
  let result = Braid_sync.Promise.create () in
  let d =
    Domain.spawn (fun () -> Braid_sync.Promise.fill result (sequential n))
  in
  let v = Braid_sync.Promise.await result in
  (* The domain has filled the promise: joining it waits only for its exit. *)
  Domain.join d;
  answer v

let roles =
  [
    ("fib-naive", `Naive);
    ("fib-composed", `Composed);
    ("fib-domain-manager", `Domain_manager);
  ]

let serve variant ~port =
  Braid_pool.with_pool ~domains:pool_domains @@ fun pool ->
  let handler =
    match variant with
    | `Naive -> naive pool
    | `Composed -> composed pool (Braid_sync.Semaphore.make 1)
    | `Domain_manager -> domain_manager
  in
  let router =
    Router.empty
    |> Router.add GET "/fib/:n" handler
    |> Router.add GET "/hello" (fun _ -> Response.string "hello\n")
  in
  match
    Server.create
      ~settings:(Real_services.settings router)
      { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" port }
  with
  | Ok server -> Server.run server
  | Error msg -> failwith msg

let dispatch () =
  match
    Option.bind (Sys.getenv_opt "BRAID_BENCH_ROLE") (fun r ->
        List.assoc_opt r roles)
  with
  | None -> ()
  | Some variant ->
      serve variant ~port:(int_of_string (Sys.getenv "BRAID_BENCH_PORT"));
      exit 0

(* The client. *)

(* The median of three: a single timing varied by 25% on this VM. *)
let one_request_seconds () =
  repeat_median 3 (fun () ->
      time_s (fun () -> ignore (Sys.opaque_identity (sequential n))))

(* What the clients ask for. Fib only is the thesis's workload; the mixed one
   adds what a real server also serves, four cheap requests ([/hello]) per
   computation, whose latency shows what a stalled event loop costs. *)
type workload = { label : string; paths : string array }

let fib_path = Printf.sprintf "/fib/%d" n

let workloads =
  [
    { label = "fib only"; paths = [| fib_path |] };
    {
      label = "mixed";
      paths = [| fib_path; "/hello"; "/hello"; "/hello"; "/hello" |];
    };
  ]

(* [load] is the offered computations per second as a fraction of what the
   pool's two cores can compute. *)
let name role workload load =
  Printf.sprintf "%s, %s, %.0f%% load" role workload.label (load *. 100.)

let spawn (role, _) =
  let port = Bench_server.Procs.free_port () in
  ( role,
    port,
    Bench_server.Procs.spawn ~name:role
      ~env:
        [ ("BRAID_BENCH_ROLE", role); ("BRAID_BENCH_PORT", string_of_int port) ]
      (Bench_server.Procs.self_role_argv ())
      ~port )

(* The three servers run side by side (idle ones cost nothing) and take
   turns at each load, so a drift of the machine's speed during the run
   does not favour whichever variant went first. *)
let measure ~capacity ~loads ~seconds =
  let servers = List.map spawn roles in
  Fun.protect
    ~finally:(fun () ->
      List.iter (fun (_, _, server) -> Bench_server.Procs.stop server) servers)
    (fun () ->
      List.concat_map
        (fun workload ->
          List.concat_map
            (fun load ->
              let rate =
                Float.round (load *. capacity)
                *. float_of_int (Array.length workload.paths)
              in
              List.map
                (fun (role, port, _) ->
                  progress "  %s at %.0f req/s for %.0f s"
                    (name role workload load) rate seconds;
                  let r =
                    Loadgen.run ~port ~paths:workload.paths ~rate ~seconds
                      ~timeout:30.
                  in
                  if r.failed > 0 then
                    progress "  %s: %d requests failed: a failed run"
                      (name role workload load) r.failed;
                  (name role workload load, workload, r))
                servers)
            loads)
        workloads)

(* A run in which any request failed (an error, a status other than 200, a
   timeout) has failed, as wrk's runs do: its throughput and latencies are
   no figures, only its count of failures is. *)
let rows_of (label, workload, (r : Loadgen.result)) =
  let ms latencies p =
    if r.failed > 0 then nan else Loadgen.percentile latencies p *. 1e3
  in
  let per_path =
    if Array.length workload.paths = 1 then []
    else
      List.map
        (fun (p : Loadgen.per_path) ->
          row label (p.path ^ " latency p90") (ms p.latencies 0.9) "ms")
        r.by_path
  in
  [
    row label "offered" r.offered "req/s";
    row label "throughput"
      (if r.failed > 0 then nan
       else float_of_int r.completed_in_window /. r.window)
      "req/s";
    row label "latency p50" (ms r.latencies 0.5) "ms";
    row label "latency p90" (ms r.latencies 0.9) "ms";
  ]
  @ per_path
  @ [
      row label "failed requests" (float_of_int r.failed) "requests";
      row label "most requests in flight"
        (float_of_int r.most_in_flight)
        "requests";
    ]

let run ~quick =
  let seconds = if quick then 3. else 10. in
  let single = one_request_seconds () in
  (* From well below to at what two cores can compute. *)
  let capacity = 2. /. single in
  let loads = if quick then [ 0.5; 1.0 ] else [ 0.25; 0.5; 0.75; 1.0 ] in
  let rows = List.concat_map rows_of (measure ~capacity ~loads ~seconds) in
  let find role workload load metric =
    (List.find
       (fun (r : row) -> r.name = name role workload load && r.metric = metric)
       rows)
      .value
  in
  (* Ratios at every load: at capacity every queue grows and latency measures
     the run's length, so the loads below it matter most. *)
  let ratios =
    List.concat_map
      (fun workload ->
        List.concat_map
          (fun load ->
            List.concat_map
              (fun other ->
                let at =
                  Printf.sprintf "%s, %.0f%% load" workload.label (load *. 100.)
                in
                let composed = find "fib-composed" workload load
                and other_is = find ("fib-" ^ other) workload load in
                [
                  ratio
                    (Printf.sprintf "composed / %s throughput, %s" other at)
                    (composed "throughput" /. other_is "throughput");
                  ratio
                    (Printf.sprintf "%s / composed p90 latency, %s" other at)
                    (other_is "latency p90" /. composed "latency p90");
                ]
                @
                if Array.length workload.paths = 1 then []
                else
                  [
                    ratio
                      (Printf.sprintf "%s / composed /hello p90 latency, %s"
                         other at)
                      (other_is "/hello latency p90"
                      /. composed "/hello latency p90");
                  ])
              [ "naive"; "domain-manager" ])
          loads)
      workloads
  in
  row "one request, sequential fib" "time" (single *. 1e3) "ms"
  :: row "two cores" "capacity" capacity "fib/s"
  :: rows
  @ ratios

let experiment =
  {
    name = "fib-server";
    summary =
      "GET /fib/34 (alone, and mixed with cheap requests) under open-loop \
       load: naive vs composed vs domain-manager handlers (thesis 2.1, 6.2)";
    run;
  }
