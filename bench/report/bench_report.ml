(* What each experiment asks, what published figure it reproduces, and which
   rows make its chart. The rows themselves come from bench/results. *)

type chart =
  | Bars of (Bench_harness.row -> bool)
      (** One horizontal bar per selected row (all must share a unit). *)
  | No_chart

type entry = {
  name : string;
  title : string;
  question : string;
  published : string;
  target : string;
  chart : chart;
}

let metric m (r : Bench_harness.row) = r.metric = m

let contains ~sub s =
  let n = String.length sub and m = String.length s in
  let rec at i = i + n <= m && (String.sub s i n = sub || at (i + 1)) in
  at 0

let entries =
  [
    {
      name = "producer-consumer";
      title = "One-slot handoff (the thesis's Table 6.1)";
      question =
        "How much does it cost to pass a value through a 1-slot MVar or \
         channel between two fibers on one domain, and between two domains?";
      published =
        "Thesis: 1.51 µs serial, 4.15 µs across domains for its MVar; Eio's \
         stream 1.63 / 4.39 µs (on a slower machine).";
      target =
        "serial ≤ 100 ns/message, parallel ≤ 1 µs/message; ratios to Lwt_mvar \
         and a Saturn baseline.";
      chart = Bars (metric "time per message");
    };
    {
      name = "cancellation-cost";
      title = "Cancellation cost (the thesis's §6.3)";
      question =
        "Does cancelling producers blocked on a channel slow the exchange \
         down? 50,000 items, 20 producers, 4 consumers; total work constant.";
      published = "Thesis: at most 5% slowdown.";
      target = "≤ 2% slowdown.";
      chart =
        Bars
          (fun r ->
            contains ~sub:"stopping by themselves" r.metric
            || contains ~sub:"no-cancellation" r.metric);
    };
    {
      name = "fib";
      title = "Nested parallelism: recursive Fibonacci on the pool";
      question =
        "Does nested async/await on the work-stealing pool scale from 1 to 2 \
         domains?";
      published = "Domainslib-style fib 32 with a sequential cutoff below 20.";
      target = "speed-up ≥ 1.8× on 2 domains.";
      chart = Bars (fun r -> contains ~sub:"wall time" r.metric);
    };
    {
      name = "pool-overhead";
      title = "Pool task overhead";
      question =
        "What does one async + await of a trivial task cost, from outside and \
         from inside the pool?";
      published = "—";
      target = "—";
      chart =
        Bars
          (fun r ->
            r.metric = "async + await"
            && not (contains ~sub:"Domain.spawn" r.name));
    };
    {
      name = "echo";
      title = "Echo server";
      question =
        "100 connections ping-ponging 64-byte messages: how many messages per \
         second?";
      published = "—";
      target = "≥ 1.5× an Lwt_unix echo server.";
      chart =
        Bars
          (fun r ->
            contains ~sub:"messages" r.unit || contains ~sub:"msg/s" r.unit);
    };
    {
      name = "io-wake";
      title = "Cross-domain wake-ups of the IO loop";
      question =
        "How long until an IO fiber runs again once another domain fills the \
         promise it awaits, and what does an idle loop cost?";
      published = "—";
      target = "—";
      chart = No_chart;
    };
    {
      name = "timers";
      title = "100,000 sleeping fibers";
      question = "Memory per sleeping fiber and time to wake them all.";
      published = "—";
      target = "—";
      chart = No_chart;
    };
    {
      name = "parser";
      title = "Effects-based HTTP parser versus Angstrom";
      question =
        "Is a direct-style parser that performs an effect to refill its buffer \
         faster, and leaner, than a callback-style Angstrom parser of the same \
         grammar?";
      published =
        "An effects-based parser was 1.2–13× faster than callback-style \
         Angstrom.";
      target = "≥ 2× Angstrom's speed and ≤ ¼ of its allocation.";
      chart = Bars (metric "time");
    };
    {
      name = "http";
      title = "HTTP keep-alive throughput";
      question =
        "wrk, 100 keep-alive connections, GET of a 1 KiB static file for 10 s; \
         server pinned to one core; five rounds, each on fresh server \
         processes. Also: does the server with its services as effects cost \
         more than the same server calling them directly? And what do its \
         trace events cost when on (BRAID_TRACE_EVENTS=1, nothing reading the \
         ring; docs/tracing.md)?";
      published = "—";
      target =
        "≥ 1.0× nginx (1 worker) and ≥ 3× cohttp-lwt-unix; effects / direct \
         calls ≥ 0.98 in throughput, server CPU and allocation per request; \
         traced / untraced ≥ 0.97 in throughput (issue 37).";
      chart = Bars (fun r -> contains ~sub:"req/s" r.unit);
    };
    {
      name = "reverse-post";
      title =
        "Effects versus direct calls in the same server (the 2022 Polysemy \
         study)";
      question =
        "Does handling logging, file access, clock and the handler store as \
         effects cost time or memory against the same server calling them \
         directly?";
      published =
        "Haskell/Polysemy: the effects version was ~10% slower and used ~12% \
         more memory.";
      target = "≤ 2% difference in time and in allocation.";
      chart = Bars (fun r -> contains ~sub:"mean response" r.metric);
    };
    {
      name = "conn-rate";
      title = "Connection rate (Marlow's Figure 1)";
      question =
        "httperf opens connections at rising rates, one 1 KiB GET each: where \
         does each server stop keeping up?";
      published =
        "Marlow's Haskell server kept up with the C servers of its day.";
      target = "Braid keeps up at least as far as nginx (1 worker).";
      chart = Bars (fun r -> contains ~sub:"reply rate" r.metric);
    };
    {
      name = "scale";
      title = "From 10 to 10,000 keep-alive connections";
      question =
        "How do throughput, server CPU per request and memory per idle \
         connection change with the number of connections? wrk -t1 (core 1) \
         with 10, 100, 1,000 and 10,000 keep-alive connections fetches a 1 KiB \
         file from braid serve, nginx and h2o, each one worker on core 0 with \
         no access log, in three rounds of fresh processes; in each round \
         every server runs twice at each size, in turn and then in the reverse \
         turn, so that a drift of the host's speed weighs on all alike \
         (medians of the six runs; server CPU from /proc over wrk's requests; \
         beside them, Braid / peer in the lowest and highest round, and how \
         much a server's two runs in one round differ: the host's noise); then \
         10,000 connections each send one request and stay idle, and the \
         servers' resident memory grows by the figure shown per connection.";
      published = "—";
      target = "—";
      chart = Bars (fun r -> r.unit = "req/s");
    };
    {
      name = "static";
      title = "Static files: 1 KiB, 64 KiB and 1 MiB";
      question =
        "How fast are files of three sizes served to keep-alive clients? wrk \
         -t1 -c100 (core 1) fetches a 1 KiB, a 64 KiB and a 1 MiB file from \
         braid serve, nginx (sendfile and tcp_nopush on) and h2o, each one \
         worker on core 0 with no access log, taking turns in three rounds of \
         fresh processes (medians; server CPU from /proc over wrk's requests).";
      published =
        "Issue 16: Braid at 0.80x nginx for 64 KiB before sendfile (29k vs 35k \
         req/s).";
      target = "≥ 1.0× nginx and ≥ 1.0× h2o at every size.";
      chart = Bars (fun r -> r.unit = "req/s");
    };
    {
      name = "tls";
      title = "HTTPS: full handshakes and keep-alive requests";
      question =
        "What do TLS handshakes and requests over TLS cost? braid serve and \
         nginx, each one worker on core 0 with the same self-signed ECDSA \
         P-256 certificate (TLS 1.3, OpenSSL's default ciphersuites and \
         groups), serve a 1 KiB file: a client on core 1 opens a new \
         connection and a new TLS session for each GET (16 at once; wrk and \
         h2load resume sessions when they reconnect, as the check rows \
         (nginx's access log, Braid's metrics) show), then wrk -t1 -c100 \
         fetches it over keep-alive connections. Three rounds of fresh \
         processes, servers taking turns (medians; server CPU from /proc over \
         the handshakes or requests completed; the busy rows show which side \
         was the limit).";
      published = "—";
      target =
        "≥ 1.0× nginx in handshakes/s and req/s, ≤ 1.0× its server CPU per \
         handshake and per request (issue 19).";
      chart =
        Bars (fun r -> r.unit = "us" && contains ~sub:"server CPU" r.metric);
    };
    {
      name = "h2";
      title = "HTTP/2: h2load over h2c and TLS";
      question =
        "How fast is HTTP/2 served, at what server CPU per request, and what \
         does an idle HTTP/2 connection hold? h2load -t1 (core 1) fetches a 1 \
         KiB and a 64 KiB file from braid serve, h2o and nginx (listen ... \
         http2), each one worker on core 0 with no access log, over h2c (prior \
         knowledge) and TLS (ALPN h2), with 10 and 100 connections of 1, 10 \
         and 100 concurrent streams (-m); a fixed request count per run, \
         connecting included; servers taking turns, rotated each round, fresh \
         processes each round (medians; server CPU from /proc over the \
         requests h2load completed; any h2load error fails the cell). Idle h2c \
         connections (one request answered, then nothing) are measured as the \
         scale benchmark's idle HTTP/1.1 ones: RSS after less before, per \
         connection.";
      published = "—";
      target =
        "≥ 1.0× h2o in req/s and ≤ 1.0× its server CPU per request (issue 34).";
      chart =
        Bars
          (fun r ->
            r.metric = "server CPU per request"
            && contains ~sub:"100 conn x 100 streams" r.name);
    };
    {
      name = "hpack";
      title = "HPACK: Braid's codec against libnghttp2's";
      question =
        "Issue 34 asked to write HPACK in OCaml or bind libnghttp2, by \
         measured result. What does each cost per field block, and how small \
         are the blocks? The corpus is one browser connection: four page loads \
         of 31 requests each (Chromium's fields, a cookie, referers, \
         priorities) and a static server's responses. Encoding runs one \
         encoder per side over the corpus again and again (one long \
         connection); decoding decodes the blocks nghttp2 encoded, the same \
         bytes for both, a fresh decoder per pass. Each side first decodes \
         what the other encoded, field for field, or the run fails. nghttp2's \
         passes run in C (one call per pass).";
      published = "—";
      target = "≥ 1.0× nghttp2's speed (issue 34's choice of codec).";
      chart = Bars (metric "time");
    };
    {
      name = "websocket";
      title = "WebSocket: 1:1 echo and 1:100 broadcast";
      question =
        "How many WebSocket messages per second, at what server CPU per \
         message? A Braid client on core 1 drives Braid's server (one event \
         loop) and Python's websockets asyncio server (one event loop), both \
         on core 0, taking turns in three rounds of fresh processes: 10 \
         connections echoing 64-byte messages, and a room of 100 connections \
         where one sends (at most 16 messages not yet received by all) and \
         every message goes to all 100 (medians; server CPU from /proc).";
      published = "—";
      target = "≥ 1.0× websockets in messages/s and ≤ 1.0× in CPU per message.";
      chart = Bars (fun r -> r.unit = "msg/s");
    };
    {
      name = "web";
      title = "The TechEmpower tests on PostgreSQL: Braid vs Go and Rust";
      question =
        "The TechEmpower Framework Benchmarks' six tests (plaintext, JSON, one \
         query, 20 queries, fortunes with HTML escaping, 20 updates) against a \
         temporary PostgreSQL 15 cluster (synchronous_commit off, as TFB), \
         side by side with what a user would pick instead: Go net/http + pgx \
         (pgxpool) and Rust axum + tokio-postgres (deadpool-postgres), sources \
         in bench/peers, built by bench/peers/build-web.sh. Every server on \
         core 0 (Go and tokio see one CPU, Braid runs one event loop), wrk \
         (one thread) and PostgreSQL on core 1; 8 database connections per \
         server; wrk at 128 connections for plaintext and JSON, 256 for the \
         database tests. Each round starts the three afresh and checks every \
         answer as TFB's verifier would (status, Server and Date, JSON shape, \
         the queries count's clamping, the escaped fortunes page, updates \
         written), then the servers take turns at each test; medians over \
         rounds, server and database CPU from /proc over wrk's requests. A wrk \
         run with a socket error or a non-2xx answer fails its cell. A test \
         that a server answers with 501 is shown as not implemented (Braid's \
         database tests until braid_postgres lands).";
      published =
        "TechEmpower rounds rank frameworks by req/s on 28-core machines; \
         nothing here compares with those figures, only the ratios.";
      target = "≥ 1.0× Go on every test; the Rust ratio reported (aim ≥ 1.0×).";
      chart = Bars (fun r -> r.metric = "ratio" && contains ~sub:"req/s" r.name);
    };
    {
      name = "client";
      title = "HTTP client: braid_client vs Go's net/http";
      question =
        "N fibers (Braid, one event loop) or goroutines (Go, GOMAXPROCS 1 by \
         its affinity) each GET a 14-byte file from nginx (one worker, core 1) \
         in a loop over keep-alive connections, reading every body whole, for \
         5 s; the client pinned to core 0. Requests per second, and the \
         client's CPU per request from its own getrusage. 1 and 50 \
         connections; rounds interleave the two clients, medians and the \
         spread over rounds. Go's client: bench/peers/client-go, built by \
         bench/peers/build-client.sh.";
      published = "—";
      target = "≥ 1.0× Go's req/s; CPU per request at most Go's.";
      chart = Bars (fun r -> r.metric = "client CPU per request");
    };
    {
      name = "proxy";
      title = "Reverse proxy: braid serve vs nginx, haproxy and h2o";
      question =
        "wrk (one thread, core 1) through a proxy (core 0) to one upstream \
         (nginx serving files, core 1): braid serve with ProxyPass, nginx \
         proxy_pass (one worker, upstream keepalive 64, 16 × 8 KiB proxy \
         buffers: a 64 KiB answer in memory), haproxy (mode http, one thread, \
         http-reuse always) and h2o (proxy.reverse.url, one thread, upstream \
         connections kept alive). A 14-byte file and a 64 KiB one, over 10, \
         100 and 1,000 keep-alive connections; each round starts the four \
         afresh, checks both documents through each, warms each up for 1 s and \
         runs wrk for 5 s, the order reversed every other round. The proxy's \
         CPU per request from /proc (the steadier figure on a shared machine) \
         and req/s; medians with the spread over rounds. A wrk error fails its \
         cell (nan, and a count of failed runs). bench/proxy/callgrind.sh \
         counts the user-space instructions per request, which no other load \
         on the machine moves.";
      published = "—";
      target =
        "≥ 1.0× nginx's, haproxy's and h2o's req/s, and at most their CPU per \
         request, at each number of connections.";
      chart = Bars (fun r -> r.metric = "proxy CPU per request");
    };
    {
      name = "lwt-bridge";
      title = "Lwt bridge";
      question =
        "What does a message Lwt → Braid fiber → Lwt cost through Braid \
         structures, against Lwt_mvar inside Lwt?";
      published = "—";
      target = "—";
      chart = Bars (fun r -> r.unit = "ns" && r.metric <> "ratio");
    };
    {
      name = "file-io";
      title = "File reads from many fibers: Braid's Blocking pool vs Lwt's";
      question =
        "100 fibers read 2,000 files of 4 KiB whole, and 8 fibers read a 64 \
         MiB file in 256 KiB chunks at offsets, from the page cache, while a \
         ticker asks to wake every millisecond: files/s and MiB/s, process CPU \
         per file and per MiB, longest stall of the loop. Braid_io.Path and \
         File (16 pool threads on their own domain) against Lwt_io and \
         Lwt_unix (pool size 16), rounds interleaved in one process.";
      published = "—";
      target = "Braid at least as fast as Lwt; no stall of either loop.";
      chart = Bars (fun r -> r.metric = "files/s");
    };
    {
      name = "fib-server";
      title = "The thesis's Fibonacci server (§2.1, §6.2)";
      question =
        "GET /fib/34 under offered load, alone and mixed with four cheap \
         requests per computation: does awaiting the pool from the connection \
         fiber beat a domain-blocking wait and a per-request domain manager?";
      published =
        "Thesis: only the composed version keeps serving while computing.";
      target = "composed beats both others on throughput and p90.";
      chart =
        Bars
          (fun r ->
            r.metric = "latency p90" && not (contains ~sub:"100% load" r.name));
    };
    {
      name = "error-handling";
      title = "Error-handling styles (Rzeźnicki's Scala study, ported)";
      question =
        "validate → transform → fetch → call the outside world → post-process \
         or bookkeeping: result with let*, exceptions, or an effect handler; \
         synchronous, across the pool (Future) or a fiber yield (IO).";
      published =
        "Rzeźnicki 2019 (JMH, Scala): verdict tables normalised to the Either \
         style.";
      target = "A table of ns/op normalised to the result style.";
      chart =
        Bars
          (fun r ->
            r.metric = "time / result style"
            && contains ~sub:"10/20" r.name
            && contains ~sub:"timeFactor 2," r.name);
    };
  ]

(* Reading results. *)

let read_rows file : Bench_harness.row list =
  let json = Yojson.Safe.from_file file in
  let open Yojson.Safe.Util in
  json |> member "rows" |> to_list
  |> List.map (fun r ->
         {
           Bench_harness.name = r |> member "name" |> to_string;
           metric = r |> member "metric" |> to_string;
           value =
             (match r |> member "value" with
             | `Null -> Float.nan
             | v -> to_number v);
           unit = r |> member "unit" |> to_string;
         })

let command_output cmd =
  try
    let ic = Unix.open_process_in (cmd ^ " 2>&1") in
    let line = try input_line ic with End_of_file -> "" in
    ignore (Unix.close_process_in ic);
    String.trim line
  with _ -> ""

let cpu_model () =
  try
    let ic = open_in "/proc/cpuinfo" in
    let rec find () =
      match input_line ic with
      | line when String.length line > 10 && String.sub line 0 10 = "model name"
        ->
          close_in ic;
          String.trim (List.nth (String.split_on_char ':' line) 1)
      | _ -> find ()
      | exception End_of_file ->
          close_in ic;
          "unknown CPU"
    in
    find ()
  with Sys_error _ -> "unknown CPU"

(* Charts. *)

let gnuplot_available () = Sys.command "command -v gnuplot >/dev/null 2>&1" = 0

let bar_chart ~svg ~title (rows : Bench_harness.row list) =
  (* The data goes inline (a datablock), not in a temporary file, whose name
     gnuplot would write into the SVG: a rerun must not change the chart. *)
  let data = Buffer.create 1024 in
  List.iteri
    (fun i (r : Bench_harness.row) ->
      (* Braid's rows in blue, peers' in grey. *)
      let colour =
        if contains ~sub:"braid" (String.lowercase_ascii r.name) then 0x4477aa
        else 0x999999
      in
      Printf.bprintf data "%d \"%s\" %g %d\n" i
        (String.map (function '"' -> '\'' | c -> c) r.name)
        r.value colour)
    rows;
  let unit = match rows with r :: _ -> r.unit | [] -> "" in
  let values =
    List.map (fun (r : Bench_harness.row) -> r.value) rows
    |> List.filter (fun v -> v > 0.)
  in
  let spread =
    match values with
    | [] -> 1.
    | _ -> List.fold_left max 0. values /. List.fold_left min infinity values
  in
  (* One outlier must not flatten the rest: past 30x, a log scale. *)
  let log_scale = spread > 30. in
  let height = 120 + (28 * List.length rows) in
  let script = Filename.temp_file "braid-chart" ".gp" in
  let oc = open_out script in
  Printf.fprintf oc
    "set terminal svg size 860,%d dynamic noenhanced font 'Helvetica,12' \
     background rgb 'white'\n\
     set output '%s'\n\
     set title \"%s\"\n\
     set xlabel \"%s%s\"\n\
     set style fill solid 0.7 border -1\n\
     set yrange [%f:-0.6]\n\
     %s\n\
     set ytics nomirror\n\
     set grid xtics\n\
     set lmargin 52\n\
     unset key\n\
     $rows << EOD\n\
     %sEOD\n\
     plot $rows using 3:1:(%g):3:($1-0.35):($1+0.35):($4):ytic(2) with \
     boxxyerror lc rgb variable\n"
    height svg title unit
    (if log_scale then " (log scale)" else "")
    (float_of_int (List.length rows) -. 0.4)
    (if log_scale then
       Printf.sprintf "set logscale x\nset xrange [%g:*]"
         (List.fold_left min infinity values /. 2.)
     else "set xrange [0:*]")
    (Buffer.contents data)
    (if log_scale then List.fold_left min infinity values /. 2. else 0.);
  close_out oc;
  let ok =
    Sys.command
      (Printf.sprintf "gnuplot %s >/dev/null 2>&1" (Filename.quote script))
    = 0
  in
  Sys.remove script;
  ok

(* The report. *)

let format_value v =
  if Float.is_nan v then "—"
  else if Float.is_integer v && Float.abs v < 1e15 then Printf.sprintf "%.0f" v
  else if Float.abs v >= 100. then Printf.sprintf "%.1f" v
  else if Float.abs v >= 1. then Printf.sprintf "%.3f" v
  else Printf.sprintf "%.4g" v

let render () =
  let results = Bench_harness.results_dir () in
  let root = Filename.dirname (Filename.dirname results) in
  let docs = Filename.concat root "docs" in
  let charts = Filename.concat docs "bench" in
  if not (Sys.file_exists charts) then Sys.mkdir charts 0o755;
  let b = Buffer.create 16384 in
  let p fmt = Printf.bprintf b fmt in
  let commit =
    command_output
      (Printf.sprintf "git -C %s rev-parse --short HEAD" (Filename.quote root))
  in
  p "# Braid benchmarks\n\n";
  p
    "Generated by `make bench` (or `dune exec --profile release -- \
     bench/main.exe report` from existing results) from \
     `bench/results/*.json`. Every figure compares Braid with peers measured \
     **in the same run** on the same machine; absolute times on a shared \
     2-core VM are noisy, ratios less so.\n\n";
  p "## Setup\n\n";
  p "| | |\n|---|---|\n";
  p "| machine | %s, %d cores, %s |\n" (cpu_model ())
    (Domain.recommended_domain_count ())
    (command_output "uname -sr");
  p "| OCaml | %s |\n" Sys.ocaml_version;
  p "| peers | %s; %s; %s; %s; %s |\n"
    (command_output "nginx -v")
    (command_output "h2o --version | head -1")
    (command_output "wrk --version | head -1")
    (command_output "httperf --version")
    (command_output "openssl version");
  p "| commit | %s |\n" (if commit = "" then "unknown" else commit);
  p "| rendered | %s |\n\n" (command_output "date -u '+%Y-%m-%d %H:%M UTC'");
  let with_gnuplot = gnuplot_available () in
  if not with_gnuplot then
    p "_gnuplot is not installed: charts were not drawn._\n\n";
  List.iter
    (fun e ->
      p "## %s\n\n" e.title;
      p "**Question.** %s\n\n" e.question;
      p "**Published figure.** %s\n\n" e.published;
      p "**Target.** %s\n\n" e.target;
      p
        "**Reproduce.** `dune exec --profile release -- bench/main.exe %s` \
         (add `--quick` for a short run).\n\n"
        e.name;
      let path = Filename.concat results (e.name ^ ".json") in
      if not (Sys.file_exists path) then p "_Not run yet._\n\n"
      else
        let rows = read_rows path in
        (match e.chart with
        | Bars select when with_gnuplot -> (
            (* A failed run's cell has no value: no bar. *)
            match
              List.filter
                (fun (r : Bench_harness.row) ->
                  select r && Float.is_finite r.value)
                rows
            with
            | [] -> ()
            | selected ->
                let svg = Filename.concat charts (e.name ^ ".svg") in
                if bar_chart ~svg ~title:e.title selected then
                  p "![%s](bench/%s.svg)\n\n" e.title e.name)
        | Bars _ | No_chart -> ());
        p "| name | metric | value | unit |\n|---|---|---:|---|\n";
        List.iter
          (fun (r : Bench_harness.row) ->
            p "| %s | %s | %s | %s |\n" r.name r.metric (format_value r.value)
              r.unit)
          rows;
        p "\n")
    entries;
  let out = Filename.concat docs "benchmarks.md" in
  let oc = open_out out in
  Buffer.output_buffer oc b;
  close_out oc;
  out
