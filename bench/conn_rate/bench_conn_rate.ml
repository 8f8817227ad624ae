open Bench_harness
module Procs = Bench_server.Procs

type result = {
  connections : int;
  replies_2xx : int;
  replies_not_2xx : int;
  duration : float;
  request_rate : float;
  connection_time_median : float;
  most_concurrent : int;
  max_connect_burst : int;
  errors : int;
  client_timo : int;
  connrefused : int;
  fd_unavail : int;
  addrunavail : int;
  client_cpu : float;
}

(* {1 httperf's report} *)

let words line =
  List.filter (( <> ) "")
    (String.split_on_char ' '
       (String.map (function '\t' -> ' ' | c -> c) line))

let parse report =
  let lines = List.map String.trim (String.split_on_char '\n' report) in
  let missing what =
    failwith ("cannot read httperf's " ^ what ^ ":\n" ^ report)
  in
  (* The first line starting with [prefix] whose words satisfy [f]: several
     lines share a prefix ("Errors:", "Connection time [ms]:"). *)
  let find prefix f =
    match
      List.find_map
        (fun l ->
          if String.starts_with ~prefix l then
            f
              (words
                 (String.sub l (String.length prefix)
                    (String.length l - String.length prefix)))
          else None)
        lines
    with
    | Some v -> v
    | None -> missing (prefix ^ " line")
  in
  let rec after key = function
    | k :: v :: _ when k = key -> Some v
    | _ :: rest -> after key rest
    | [] -> None
  in
  let tagged tag ws =
    List.find_map
      (fun w ->
        if String.starts_with ~prefix:tag w then
          Some
            (String.sub w (String.length tag)
               (String.length w - String.length tag))
        else None)
      ws
  in
  let num conv prefix key =
    find prefix (fun ws -> Option.bind (after key ws) conv)
  in
  let float = num float_of_string_opt and int = num int_of_string_opt in
  let duration = float "Total:" "test-duration" in
  let cpu = float "CPU time [s]:" "user" +. float "CPU time [s]:" "system" in
  {
    connections = int "Total:" "connections";
    replies_2xx =
      find "Reply status:" (fun ws ->
          Option.bind (tagged "2xx=" ws) int_of_string_opt);
    replies_not_2xx =
      find "Reply status:" (fun ws ->
          List.fold_left
            (fun sum tag ->
              match
                (sum, Option.bind (tagged (tag ^ "=") ws) int_of_string_opt)
              with
              | Some sum, Some n -> Some (sum + n)
              | _ -> None)
            (Some 0)
            [ "1xx"; "3xx"; "4xx"; "5xx" ]);
    duration;
    request_rate =
      find "Request rate:" (function
        | v :: _ -> float_of_string_opt v
        | [] -> None);
    connection_time_median = float "Connection time [ms]:" "median";
    most_concurrent =
      find "Connection rate:" (fun ws ->
          Option.bind (tagged "<=" ws) int_of_string_opt);
    max_connect_burst =
      find "Maximum connect burst length:" (function
        | v :: _ -> int_of_string_opt v
        | [] -> None);
    errors = int "Errors:" "total";
    client_timo = int "Errors:" "client-timo";
    connrefused = int "Errors:" "connrefused";
    fd_unavail = int "Errors:" "fd-unavail";
    addrunavail = int "Errors:" "addrunavail";
    client_cpu = (if duration > 0. then 100. *. cpu /. duration else nan);
  }

(* {1 The machine's client-side limits} *)

let read_file path =
  match In_channel.with_open_text path In_channel.input_all with
  | s -> Some (String.trim s)
  | exception Sys_error _ -> None

let sysctl_int name =
  Option.bind (read_file ("/proc/sys/net/ipv4/" ^ name)) int_of_string_opt

let port_range_size () =
  match
    Option.map words (read_file "/proc/sys/net/ipv4/ip_local_port_range")
  with
  | Some [ lo; hi ] -> (
      match (int_of_string_opt lo, int_of_string_opt hi) with
      | Some lo, Some hi -> Some (hi - lo + 1)
      | _ -> None)
  | _ -> None

(* Sockets in TIME_WAIT, machine-wide: what a run leaves behind for the
   next one's client ports. *)
let time_wait () =
  Option.bind (read_file "/proc/net/sockstat") (fun s ->
      List.find_map
        (fun l ->
          match words l with
          | "TCP:" :: rest ->
              let rec tw = function
                | "tw" :: v :: _ -> int_of_string_opt v
                | _ :: r -> tw r
                | [] -> None
              in
              tw rest
          | _ -> None)
        (String.split_on_char '\n' s))

(* httperf raises its soft limit to the hard one but never past FD_SETSIZE,
   since it uses select. *)
let httperf_descriptors () = min 1024 (snd (Procs.descriptor_limits ()))

(* {1 Runs} *)

let timeout_s = 5

let httperf ~port ~rate ~conns =
  let cmd =
    Printf.sprintf
      "taskset -c %d httperf --server 127.0.0.1 --port %d --uri /1k.txt --rate \
       %d --num-conns %d --num-calls 1 --timeout %d 2>&1"
      Bench_server.client_cpu port rate conns timeout_s
  in
  let ic = Unix.open_process_in cmd in
  let report = In_channel.input_all ic in
  match Unix.close_process_in ic with
  | WEXITED 0 -> parse report
  | _ -> failwith ("httperf failed:\n" ^ report)

(* As wrk's runs: a run with errors or replies other than 2xx has failed,
   and its reply rate, connection time and CPU per reply are no figures. *)
let failed r = r.errors > 0 || r.replies_not_2xx > 0

let keeps_up ~rate r =
  (not (failed r)) && float r.replies_2xx /. r.duration >= 0.95 *. float rate

type server = {
  label : string;
  port : int;
  proc : Procs.t;
  stop : unit -> unit;
}

let start_servers root =
  let servers = ref [] in
  (try
     let port = Procs.free_port () in
     let p = Bench_server.start_role "braid-static" ~root ~port in
     servers :=
       [ { label = "braid"; port; proc = p; stop = (fun () -> Procs.stop p) } ];
     let port = Procs.free_port () in
     (* nginx's default listen queue is 511; Braid's is 4096 (the kernel's
        somaxconn caps both): the same queue for both, so a burst of SYNs
        is not dropped by one and queued by the other. *)
     match
       Bench_server.Peers.start_nginx ~backlog:4096 ~cpu:Bench_server.server_cpu
         ~port ~root ()
     with
     | Some (proc, stop) ->
         servers := !servers @ [ { label = "nginx"; port; proc; stop } ]
     | None -> progress "conn-rate: nginx not found, Braid alone"
   with e ->
     List.iter (fun s -> s.stop ()) !servers;
     raise e);
  !servers

let run ~quick =
  let rates =
    if quick then [ 2000; 6000; 10000 ]
    else [ 1000; 2000; 4000; 6000; 8000; 10000; 12000; 14000; 16000 ]
  and seconds = if quick then 1.5 else 4. in
  let load_start =
    row "machine" "load average (1 min) at start" (Procs.load_average ()) ""
  in
  let root = Bench_server.public () in
  let expected =
    In_channel.with_open_bin
      (Filename.concat root "1k.txt")
      In_channel.input_all
  in
  let servers = start_servers root in
  let most_tw = ref 0 in
  let results = Hashtbl.create 32 in
  Fun.protect
    ~finally:(fun () -> List.iter (fun s -> s.stop ()) servers)
    (fun () ->
      List.iter
        (fun s ->
          (match Procs.get ~port:s.port "/1k.txt" with
          | 200, body when body = expected -> ()
          | status, _ ->
              failwith (Printf.sprintf "%s: /1k.txt gave %d" s.label status));
          progress "conn-rate: warming up %s" s.label;
          (* At a rate both servers take easily, an error is the setup's. *)
          let r = httperf ~port:s.port ~rate:1000 ~conns:1000 in
          if failed r then
            failwith
              (Printf.sprintf
                 "conn-rate: warming up %s at 1000 conn/s, httperf saw %d \
                  errors (client-timo %d, connrefused %d, fd-unavail %d, \
                  addrunavail %d) and %d replies other than 2xx: a failed run"
                 s.label r.errors r.client_timo r.connrefused r.fd_unavail
                 r.addrunavail r.replies_not_2xx))
        servers;
      List.iteri
        (fun i rate ->
          let conns = int_of_float (float rate *. seconds) in
          let order = if i mod 2 = 0 then servers else List.rev servers in
          List.iter
            (fun s ->
              (* A second's pause: the server settles, and TIME_WAIT ports
                 become reusable (tcp_tw_reuse waits one second). *)
              Unix.sleepf 1.;
              Option.iter (fun n -> most_tw := max !most_tw n) (time_wait ());
              let cpu0 = Procs.cpu_seconds s.proc in
              let r = httperf ~port:s.port ~rate ~conns in
              let cpu = Procs.cpu_seconds s.proc -. cpu0 in
              progress
                "conn-rate: %s at %d conn/s: %.0f replies/s, %d errors, %d \
                 non-2xx replies%s, median %.1f ms, server CPU %.0f%%, httperf \
                 CPU %.0f%%"
                s.label rate
                (float r.replies_2xx /. r.duration)
                r.errors r.replies_not_2xx
                (if failed r then " (a failed run)" else "")
                r.connection_time_median
                (100. *. cpu /. r.duration)
                r.client_cpu;
              Hashtbl.replace results (s.label, rate) (r, cpu))
            order)
        rates;
      let per_rate s rate =
        let r, cpu = Hashtbl.find results (s.label, rate) in
        let name = Printf.sprintf "%s at %d conn/s" s.label rate in
        let count metric v = row name metric (float v) "" in
        (* The server's figures of a failed run are none: no value. *)
        let figure metric v unit =
          row name metric (if failed r then nan else v) unit
        in
        [
          figure "reply rate" (float r.replies_2xx /. r.duration) "replies/s";
          row name "request rate" r.request_rate "req/s";
          figure "connection time median" r.connection_time_median "ms";
          row name "failed run (errors or non-2xx replies)"
            (if failed r then 1. else 0.)
            "1 = yes";
          count "errors" r.errors;
          count "non-2xx replies" r.replies_not_2xx;
          count "client-timo" r.client_timo;
          count "connrefused" r.connrefused;
          count "fd-unavail" r.fd_unavail;
          count "addrunavail" r.addrunavail;
          count "most concurrent connections" r.most_concurrent;
          figure "server CPU" (100. *. cpu /. r.duration) "% of a core";
          figure "server CPU per reply"
            (1e6 *. cpu /. float (max 1 r.replies_2xx))
            "us";
          count "httperf's longest connect burst" r.max_connect_burst;
          row name "httperf CPU" r.client_cpu "% of a core";
          row name "keeps up" (if keeps_up ~rate r then 1. else 0.) "1 = yes";
        ]
      in
      let keeps_up_until s =
        List.fold_left
          (fun best rate ->
            let r, _ = Hashtbl.find results (s.label, rate) in
            if keeps_up ~rate r then max best rate else best)
          0 rates
      in
      let until =
        List.map (fun s -> (s.label, float (keeps_up_until s))) servers
      in
      let summary =
        List.map (fun (label, v) -> row label "keeps up until" v "conn/s") until
      in
      (* CPU per reply moves little with the load on the machine, unlike
         the rates, which depend on how much of its core each side got.
         Over the rates where no server's run failed, the same for each. *)
      let rates_without_failures =
        List.filter
          (fun rate ->
            List.for_all
              (fun s ->
                not (failed (fst (Hashtbl.find results (s.label, rate)))))
              servers)
          rates
      in
      let cpu_per_reply label =
        match rates_without_failures with
        | [] -> nan
        | rates ->
            median
              (List.map
                 (fun rate ->
                   let r, cpu = Hashtbl.find results (label, rate) in
                   cpu /. float (max 1 r.replies_2xx))
                 rates)
      in
      let cpu_ratio =
        if List.exists (fun s -> s.label = "nginx") servers then
          [
            ratio
              "nginx / braid (server CPU per reply, median over rates without \
               a failed run)"
              (cpu_per_reply "nginx" /. cpu_per_reply "braid");
          ]
        else []
      in
      let ratio_row =
        (match (List.assoc_opt "braid" until, List.assoc_opt "nginx" until) with
        | Some b, Some n when n > 0. ->
            [ ratio "braid / nginx (keeps-up-until rate)" (b /. n) ]
        | _ -> [])
        @ cpu_ratio
      in
      let machine metric v unit =
        row "machine" metric
          (match v with Some v -> float v | None -> nan)
          unit
      in
      load_start
      :: List.concat_map
           (fun rate -> List.concat_map (fun s -> per_rate s rate) servers)
           rates
      @ summary @ ratio_row
      @ [
          machine "highest rate tried"
            (Some (List.fold_left max 0 rates))
            "conn/s";
          row "machine" "seconds per rate" seconds "s";
          machine "client port range (ip_local_port_range)" (port_range_size ())
            "ports";
          machine "net.ipv4.tcp_tw_reuse" (sysctl_int "tcp_tw_reuse") "";
          machine "httperf descriptors (hard ulimit -n, at most FD_SETSIZE)"
            (Some (httperf_descriptors ()))
            "";
          machine "most TIME_WAIT sockets before a run" (Some !most_tw)
            "sockets";
          row "machine" "load average (1 min) at end" (Procs.load_average ()) "";
        ])

let experiment =
  {
    name = "conn-rate";
    summary =
      "httperf opens connections at rising rates, one 1 KiB GET each: reply \
       rate vs offered rate for Braid and nginx, and where each stops keeping \
       up (server on core 0, httperf on core 1)";
    run;
  }
