open Bench_harness
open Braid_server

(* fib 34 takes about 30 ms on one core of the development machine. *)
let n = 34
let pool_domains = 2

(* The demo server's own functions: the benchmark measures what
   [braid serve --demo] serves. *)
let sequential = Demo.sequential_fib
let parallel = Demo.parallel_fib
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

(* At most [pool_domains] computations run at once; later requests wait in
   the semaphore's arrival order. Past capacity, admitting them all would
   share the cores among every request and make each one late. *)
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
    | `Composed -> composed pool (Braid_sync.Semaphore.make pool_domains)
    | `Domain_manager -> domain_manager
  in
  let router = Router.empty |> Router.add GET "/fib/:n" handler in
  match
    Server.create
      ~settings:(Production.settings router)
      ~config:Config.default
      (Braid_io.Net.tcp "127.0.0.1" port)
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

let one_request_seconds () =
  let t = time_s (fun () -> ignore (Sys.opaque_identity (sequential n))) in
  t

let measure (role, _) ~rates ~seconds =
  let port = Bench_server.Procs.free_port () in
  let server =
    Bench_server.Procs.spawn ~name:role
      ~env:
        [ ("BRAID_BENCH_ROLE", role); ("BRAID_BENCH_PORT", string_of_int port) ]
      (Bench_server.Procs.self_role_argv ())
      ~port
  in
  Fun.protect
    ~finally:(fun () -> Bench_server.Procs.stop server)
    (fun () ->
      List.map
        (fun rate ->
          progress "  %s at %.0f req/s for %.0f s" role rate seconds;
          let r =
            Loadgen.run ~port
              ~path:(Printf.sprintf "/fib/%d" n)
              ~rate ~seconds ~timeout:30.
          in
          (rate, r))
        rates)

let run ~quick =
  let seconds = if quick then 3. else 10. in
  let single = one_request_seconds () in
  (* Rates from well below to above what two cores can compute. *)
  let capacity = 2. /. single in
  let rates =
    List.map
      (fun f -> Float.round (f *. capacity))
      (if quick then [ 0.5; 1.0 ] else [ 0.25; 0.5; 0.75; 1.0 ])
  in
  let results =
    List.map (fun role -> (fst role, measure role ~rates ~seconds)) roles
  in
  let rows =
    List.concat_map
      (fun (role, per_rate) ->
        List.concat_map
          (fun (rate, (r : Loadgen.result)) ->
            let label = Printf.sprintf "%s at %.0f req/s" role rate in
            let ms p = Loadgen.percentile r.latencies p *. 1e3 in
            [
              row label "throughput"
                (float_of_int r.completed /. r.duration)
                "req/s";
              row label "latency p50" (ms 0.5) "ms";
              row label "latency p90" (ms 0.9) "ms";
              row label "failed requests" (float_of_int r.failed) "requests";
              row label "most requests in flight"
                (float_of_int r.most_in_flight)
                "requests";
            ])
          per_rate)
      results
  in
  let find role rate metric =
    (List.find
       (fun (r : row) ->
         r.name = Printf.sprintf "%s at %.0f req/s" role rate
         && r.metric = metric)
       rows)
      .value
  in
  (* Ratios at every rate: past capacity every queue grows and latency
     measures the run's length, so the rates below it matter most. *)
  let ratios =
    List.concat_map
      (fun rate ->
        List.concat_map
          (fun other ->
            [
              ratio
                (Printf.sprintf "composed / %s throughput at %.0f req/s" other
                   rate)
                (find "fib-composed" rate "throughput"
                /. find ("fib-" ^ other) rate "throughput");
              ratio
                (Printf.sprintf "%s / composed p90 latency at %.0f req/s" other
                   rate)
                (find ("fib-" ^ other) rate "latency p90"
                /. find "fib-composed" rate "latency p90");
            ])
          [ "naive"; "domain-manager" ])
      rates
  in
  (row "one request, sequential fib" "time" (single *. 1e3) "ms" :: rows)
  @ ratios

let experiment =
  {
    name = "fib-server";
    summary =
      "GET /fib/34 under open-loop load: naive vs composed vs domain-manager \
       handlers (thesis 2.1, 6.2)";
    run;
  }
