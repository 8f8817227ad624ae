open Braid_web

let methods =
  [| "GET"; "HEAD"; "POST"; "PUT"; "DELETE"; "OPTIONS"; "PATCH"; "other" |]

(* Per response: a match on the method itself, not on its name. *)
let method_index : Braid_http.Method.t -> int = function
  | GET -> 0
  | HEAD -> 1
  | POST -> 2
  | PUT -> 3
  | DELETE -> 4
  | OPTIONS -> 5
  | PATCH -> 6
  | CONNECT | TRACE -> 7

(* The access log's names: HTTP/2 as "HTTP/2.0". A response to no request
   read (a 400 to an unreadable head) counts as "none". *)
let protocols = [| "HTTP/1.0"; "HTTP/1.1"; "HTTP/2.0"; "none" |]

let protocol_index : Braid_http.Request.version -> int = function
  | Http_1_0 -> 0
  | Http_1_1 -> 1
  | Http_2 -> 2

let classes = [| "1xx"; "2xx"; "3xx"; "4xx"; "5xx" |]

(* Upper bounds of the duration buckets, in seconds; the last is +Inf. *)
let bounds =
  [|
    0.001; 0.0025; 0.005; 0.01; 0.025; 0.05; 0.1; 0.25; 0.5; 1.; 2.5; 5.; 10.;
  |]

type t = {
  requests : int Atomic.t array;  (** method * 5 + class *)
  by_protocol : int Atomic.t array;  (** as [protocols] *)
  buckets : int Atomic.t array;  (** per bound, then +Inf; not cumulative *)
  duration_us : int Atomic.t;  (** Sum of the durations, microseconds. *)
  bytes_out : int Atomic.t;
  bytes_in : int Atomic.t;
  accepted : int Atomic.t;
  closed : int Atomic.t;
  refused : int Atomic.t;
  reloads : int Atomic.t;
  reload_failures : int Atomic.t;
  handshakes : int Atomic.t array;  (** full, resumed, failed *)
}

let counters n = Array.init n (fun _ -> Atomic.make 0)

let create () =
  {
    requests = counters (Array.length methods * Array.length classes);
    by_protocol = counters (Array.length protocols);
    buckets = counters (Array.length bounds + 1);
    duration_us = Atomic.make 0;
    bytes_out = Atomic.make 0;
    bytes_in = Atomic.make 0;
    accepted = Atomic.make 0;
    closed = Atomic.make 0;
    refused = Atomic.make 0;
    reloads = Atomic.make 0;
    reload_failures = Atomic.make 0;
    handshakes = counters 3;
  }

let add counter n = ignore (Atomic.fetch_and_add counter n : int)

let bucket_of seconds =
  let rec find i =
    if i = Array.length bounds || seconds <= bounds.(i) then i else find (i + 1)
  in
  find 0

let observe t (a : Log_event.access) ~now =
  let meth, protocol =
    match a.request with
    | Some r -> (method_index r.meth, protocol_index r.version)
    | None -> (Array.length methods - 1, Array.length protocols - 1)
  in
  Atomic.incr t.by_protocol.(protocol);
  let cls = max 0 (min 4 ((a.status / 100) - 1)) in
  Atomic.incr t.requests.((meth * Array.length classes) + cls);
  let seconds = Float.max 0. (now -. a.time) in
  Atomic.incr t.buckets.(bucket_of seconds);
  add t.duration_us (int_of_float (seconds *. 1e6));
  add t.bytes_out a.body_bytes

let received t n = add t.bytes_in n
let accepted t = Atomic.incr t.accepted
let closed t = Atomic.incr t.closed
let refused t = Atomic.incr t.refused

let reloaded t ~ok =
  Atomic.incr t.reloads;
  if not ok then Atomic.incr t.reload_failures

type handshake = Full | Resumed | Failed

let handshake_index = function Full -> 0 | Resumed -> 1 | Failed -> 2
let tls_handshake t h = Atomic.incr t.handshakes.(handshake_index h)

type gauge = { name : string; help : string; value : float; counter : bool }

let header b name help kind =
  Printf.bprintf b "# HELP braid_%s %s\n# TYPE braid_%s %s\n" name help name
    kind

let write_counter b name help value =
  header b name help "counter";
  Printf.bprintf b "braid_%s %d\n" name value

let render t gauges =
  let b = Buffer.create 4096 in
  header b "requests_total" "Responses sent, by method and status class."
    "counter";
  Array.iteri
    (fun m meth ->
      Array.iteri
        (fun c cls ->
          Printf.bprintf b "braid_requests_total{method=%S,status=%S} %d\n" meth
            cls
            (Atomic.get t.requests.((m * Array.length classes) + c)))
        classes)
    methods;
  header b "requests_by_protocol_total"
    "Responses sent, by the request's protocol." "counter";
  Array.iteri
    (fun i protocol ->
      Printf.bprintf b "braid_requests_by_protocol_total{protocol=%S} %d\n"
        protocol
        (Atomic.get t.by_protocol.(i)))
    protocols;
  header b "request_duration_seconds"
    "From the request head read to the response logged." "histogram";
  let cumulative = ref 0 in
  Array.iteri
    (fun i bound ->
      cumulative := !cumulative + Atomic.get t.buckets.(i);
      Printf.bprintf b "braid_request_duration_seconds_bucket{le=\"%g\"} %d\n"
        bound !cumulative)
    bounds;
  cumulative := !cumulative + Atomic.get t.buckets.(Array.length bounds);
  Printf.bprintf b "braid_request_duration_seconds_bucket{le=\"+Inf\"} %d\n"
    !cumulative;
  Printf.bprintf b "braid_request_duration_seconds_sum %.6f\n"
    (float (Atomic.get t.duration_us) /. 1e6);
  Printf.bprintf b "braid_request_duration_seconds_count %d\n" !cumulative;
  write_counter b "response_body_bytes_total" "Bytes of response content sent."
    (Atomic.get t.bytes_out);
  write_counter b "received_bytes_total" "Bytes read from client connections."
    (Atomic.get t.bytes_in);
  write_counter b "connections_accepted_total" "Connections accepted."
    (Atomic.get t.accepted);
  write_counter b "connections_closed_total" "Connections closed."
    (Atomic.get t.closed);
  write_counter b "connections_refused_total"
    "Connections closed to admit others, or refused by the per-client cap."
    (Atomic.get t.refused);
  write_counter b "reloads_total" "Configuration reloads (SIGHUP)."
    (Atomic.get t.reloads);
  write_counter b "reload_failures_total"
    "Reloads rejected (the old configuration stayed)."
    (Atomic.get t.reload_failures);
  header b "tls_handshakes_total"
    "TLS handshakes: full, resumed (a ticket or session ID), or failed (timed \
     out included)."
    "counter";
  List.iter
    (fun h ->
      Printf.bprintf b "braid_tls_handshakes_total{outcome=%S} %d\n"
        (match h with
        | Full -> "full"
        | Resumed -> "resumed"
        | Failed -> "failed")
        (Atomic.get t.handshakes.(handshake_index h)))
    [ Full; Resumed; Failed ];
  List.iter
    (fun g ->
      header b g.name g.help (if g.counter then "counter" else "gauge");
      Printf.bprintf b "braid_%s %.17g\n" g.name g.value)
    gauges;
  Buffer.contents b

let gauge name help value = { name; help; value; counter = false }

let counter name help value =
  { name; help; value = float value; counter = true }

let process_gauges () =
  let gc = Gc.quick_stat () in
  let pool = Braid_io.Blocking.stats (Braid_io.Blocking.shared ()) in
  [
    gauge "gc_minor_words" "Words allocated in minor heaps." gc.minor_words;
    gauge "gc_major_words" "Words allocated in the major heap." gc.major_words;
    gauge "gc_minor_collections" "Minor collections."
      (float gc.minor_collections);
    gauge "gc_major_collections" "Major collection cycles."
      (float gc.major_collections);
    gauge "gc_heap_words" "Major heap size, words." (float gc.heap_words);
    gauge "gc_top_heap_words" "Largest major heap, words."
      (float gc.top_heap_words);
    gauge "blocking_pool_threads" "Threads of the blocking-call pool."
      (float pool.threads);
    gauge "blocking_pool_busy" "Pool threads running a call." (float pool.busy);
    gauge "blocking_pool_queued" "Calls waiting for a pool thread."
      (float pool.queued);
  ]
