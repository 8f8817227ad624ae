(* Services follow the fiber: a request handler's forked fibers and pool
   tasks log into the same log, a child fiber reads the body (and reading it
   where it cannot be read fails with a clear error), on in-memory services
   and on a real socket. And in-memory time drives every timeout of the
   pipeline: the head, the body, the handler, the keep-alive wait. *)

open Braid_server
open Braid_web
open Text_and_process
module Connection = Braid_server.Private.Connection
module Pipeline = Braid_server.Private.Pipeline
module Promise = Braid_sync.Promise
module Mvar = Braid_sync.Mvar
module Fiber = Braid.Fiber
module Switch = Braid.Switch

let get path = Printf.sprintf "GET %s HTTP/1.1\r\nHost: t\r\n\r\n" path

let post path body =
  Printf.sprintf "POST %s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n%s"
    path (String.length body) body

(* What a fiber that reads the body after its request ended got. *)
let late_read : string option Atomic.t = Atomic.make None

(* Fibers a handler leaves running after its request: they wait for [go]
   and report what reading the body or writing the stream did. *)
let go = Promise.create ()
let stray : string option Atomic.t = Atomic.make None

let leave_running f =
  ignore
    (Fiber.fork (fun () ->
         Promise.await go;
         Atomic.set stray
           (Some (match f () with s -> s | exception Invalid_argument m -> m))))

(* The pool task /pool-spin started. *)
let pool_work : unit Promise.t option Atomic.t = Atomic.make None

let routes pool =
  Router.empty
  |> Router.add GET "/hello" (fun _ -> Response.string "hello")
  |> Router.add GET "/fork-log" (fun _ ->
         Switch.run (fun sw ->
             ignore
               (Fiber.fork ~sw (fun () ->
                    Fiber.yield ();
                    Log.info "from a forked fiber")));
         Response.string "forked")
  |> Router.add GET "/pool-log" (fun _ ->
         let domain =
           Promise.await
             (Braid_pool.async pool (fun () ->
                  Log.info "from a pool task";
                  (Domain.self () :> int)))
         in
         Response.string (string_of_int domain))
  |> Router.add POST "/child-read" (fun r ->
         Switch.run (fun sw ->
             match
               Fiber.join (Fiber.fork ~sw (fun () -> Body.to_string r.body))
             with
             | Ok s -> Response.string ("child read " ^ s)
             | Error e -> Response.error e.status e.reason))
  |> Router.add POST "/pool-read" (fun r ->
         match
           Promise.await
             (Braid_pool.async pool (fun () -> Body.to_string r.body))
         with
         | _ -> Response.string "read on the pool"
         | exception Invalid_argument msg -> Response.string ~status:409 msg)
  |> Router.add POST "/late-read" (fun r ->
         ignore
           (Fiber.fork (fun () ->
                Fiber.yield ();
                Atomic.set late_read
                  (Some
                     (match Body.to_string r.body with
                     | Ok s -> "read " ^ s
                     | Error _ -> "error"
                     | exception Invalid_argument msg -> msg))));
         Response.string "answered")
  |> Router.add POST "/stray-read" (fun r ->
         leave_running (fun () ->
             match Body.to_string r.body with
             | Ok s -> "read " ^ s
             | Error _ -> "error");
         match Body.to_string r.body with
         | Ok s -> Response.string s
         | Error e -> Response.error e.status e.reason)
  |> Router.add GET "/stray-write" (fun _ ->
         Response.stream (fun w ->
             leave_running (fun () ->
                 Response.Writer.write w "late";
                 "wrote");
             Response.Writer.write w "in time"))
  |> Router.add GET "/pool-spin" (fun _ ->
         let work =
           Braid_pool.async pool (fun () ->
               while true do
                 Fiber.yield ()
               done)
         in
         Atomic.set pool_work (Some work);
         Promise.await work;
         Response.string "never")
  |> Router.add GET "/sleep" (fun _ ->
         Services.sleep 100.;
         Response.string "slept")
  |> Router.add POST "/size" (fun r ->
         match Body.to_string r.body with
         | Ok s -> Response.string (string_of_int (String.length s))
         | Error e -> Response.error e.status e.reason)
  |> Router.add POST "/read" (fun r ->
         match Body.to_string r.body with
         | Ok s -> Response.string s
         | Error e -> Response.error e.status e.reason)

(* {1 One connection on in-memory services, under a FIFO scheduler}

   The connection reads what the test sends (blocking its fiber in between,
   as a socket would), is registered with a loop context whose sweeper runs,
   and every clock it reads is the in-memory one. *)

type connection = {
  send : string -> unit;  (** Delivers bytes and wakes the reader. *)
  arrive : string -> unit;
      (** Delivers bytes without waking the reader, as while the process was
          stopped: they wait in the "socket" until the next [send]. *)
  wake_spuriously : unit -> unit;
      (** Ends the connection's wait for input with no bytes there, as a
          readiness event whose bytes an earlier read had already taken. *)
  output : Buffer.t;
  outcome : Pipeline.outcome option ref;
  mem : In_memory.t;
  context : Connection.context;
}

let outcome_name = function
  | None -> "running"
  | Some Pipeline.Peer_closed -> "Peer_closed"
  | Some Server_closed -> "Server_closed"
  | Some Parked -> "Parked"

(* Lets the other fibers run until they all wait: the FIFO scheduler runs
   each runnable fiber once per yield, and nothing here waits on real time. *)
let quiesce () =
  for _ = 1 to 100 do
    Fiber.yield ()
  done

(* Yields until [condition] holds. Pool tasks answer from another domain,
   so a yield may find nothing new: then this domain naps a millisecond. The
   10 s bound only turns a hang into a failure; nothing here is timed. *)
let wait_until what condition =
  let give_up = Unix.gettimeofday () +. 10. in
  let rec go n =
    if not (condition ()) then
      if Unix.gettimeofday () > give_up then
        Alcotest.failf "never happened: %s" what
      else (
        Fiber.yield ();
        if n mod 100 = 0 then Unix.sleepf 0.001;
        go (n + 1))
  in
  go 1

let with_connection ?(config = Config.default) ?(await = false) f =
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let mem = In_memory.create ~router:(routes pool) () in
  Braid_fifo.run @@ fun () ->
  In_memory.run mem @@ fun () ->
  Switch.run @@ fun sw ->
  let context = Connection.context () in
  let sweeper = Fiber.fork ~sw (fun () -> Connection.sweep context) in
  (* The "socket": bytes that arrived, and a signal that wakes a reader. A
     waiting read or wait for input is interrupted as a socket's is
     (Fd.interrupt): the exception is raised from it. *)
  let arrived = ref "" and wake = Mvar.create_empty () in
  let interrupted = ref None in
  let take_wake () =
    Mvar.take wake;
    match !interrupted with
    | Some e ->
        interrupted := None;
        raise e
    | None -> ()
  in
  let rec read buf off len =
    if !arrived = "" then (
      take_wake ();
      read buf off len)
    else
      let n = min len (String.length !arrived) in
      Bytes.blit_string !arrived 0 buf off n;
      arrived := String.sub !arrived n (String.length !arrived - n);
      n
  in
  let arrive s = arrived := !arrived ^ s in
  (* Like a socket's readiness: waits for bytes without taking them, unless
     interrupted, or woken once with nothing there ([wake_spuriously]). *)
  let spurious = ref false in
  let rec await_input () =
    if !spurious then spurious := false
    else if !arrived = "" then (
      take_wake ();
      await_input ())
  in
  let wake_spuriously () =
    spurious := true;
    ignore (Mvar.try_put wake ())
  in
  let interrupt e =
    interrupted := Some e;
    ignore (Mvar.try_put wake ())
  in
  let send s =
    arrive s;
    ignore (Mvar.try_put wake ())
  in
  let output = Buffer.create 256 and outcome = ref None in
  let write buf off len = Buffer.add_subbytes output buf off len in
  let served =
    Fiber.fork ~sw (fun () ->
        outcome :=
          Some
            (Connection.serve_stream context config
               ~pending:(fun () -> !arrived <> "")
               ?await_input:(if await then Some await_input else None)
               ?interrupt:(if await then Some interrupt else None)
               ~peer:None ~read ~write ()))
  in
  let result =
    f { send; arrive; wake_spuriously; output; outcome; mem; context }
  in
  Fiber.cancel served;
  Fiber.cancel sweeper;
  result

let responses c =
  let rs, rest = Wire.parse (Buffer.contents c.output) in
  if rest <> "" then Alcotest.failf "incomplete response: %S" rest;
  rs

let statuses c = List.map (fun (r : Wire.response) -> r.status) (responses c)

let messages mem =
  List.filter_map
    (function Log.Message { text; _ } -> Some text | _ -> None)
    (In_memory.events mem)

let check_statuses name expected c =
  Alcotest.(check (list int)) name expected (statuses c)

let exchange c request n =
  c.send request;
  wait_until (Printf.sprintf "%d responses" n) (fun () ->
      List.length (fst (Wire.parse (Buffer.contents c.output))) >= n)

(* {1 Services follow the fiber} *)

let forked_fiber_logs () =
  with_connection (fun c ->
      exchange c (get "/fork-log") 1;
      check_statuses "answered" [ 200 ] c;
      Alcotest.(check bool)
        "the forked fiber's message is in the connection's log" true
        (List.mem "from a forked fiber" (messages c.mem)))

let pool_task_logs () =
  let here = (Domain.self () :> int) in
  with_connection (fun c ->
      exchange c (get "/pool-log") 1;
      let r = List.hd (responses c) in
      Alcotest.(check bool)
        "the task ran on another domain" true
        (int_of_string r.body <> here);
      Alcotest.(check bool)
        "its message is in the connection's log" true
        (List.mem "from a pool task" (messages c.mem)))

let child_reads_body () =
  with_connection (fun c ->
      exchange c (post "/child-read" "hello" ^ get "/hello") 2;
      check_statuses "both answered" [ 200; 200 ] c;
      Alcotest.(check string)
        "the child read the body" "child read hello"
        (List.hd (responses c)).body)

let pool_read_refused () =
  with_connection (fun c ->
      exchange c (post "/pool-read" "hello" ^ get "/hello") 2;
      check_statuses "refused, then the next request" [ 409; 200 ] c;
      let msg = (List.hd (responses c)).body in
      Alcotest.(check bool)
        (Printf.sprintf "a clear error (%S)" msg)
        true
        (contains msg "another domain"))

let late_read_refused () =
  Atomic.set late_read None;
  with_connection (fun c ->
      exchange c (post "/late-read" "first" ^ post "/read" "second") 2;
      quiesce ();
      check_statuses "both answered" [ 200; 200 ] c;
      Alcotest.(check string)
        "the next request's body was not stolen" "second"
        (List.nth (responses c) 1).body;
      match Atomic.get late_read with
      | Some msg ->
          Alcotest.(check bool)
            (Printf.sprintf "a clear error (%S)" msg)
            true
            (contains msg "the request is over")
      | None -> Alcotest.fail "the late reader never ran")

(* The request's body and stream are closed however the exchange ends:
   here the body read times out, and the stream returns. *)
let strays_refused () =
  let check what expected =
    match Atomic.get stray with
    | Some msg ->
        Alcotest.(check bool)
          (Printf.sprintf "%s: a clear error (%S)" what msg)
          true (contains msg expected)
    | None -> Alcotest.failf "%s: the stray fiber never ran" what
  in
  with_connection (fun c ->
      c.send
        "POST /stray-read HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab";
      quiesce ();
      In_memory.advance c.mem (Config.default.timeouts.body +. 1.);
      wait_until "408" (fun () -> statuses c = [ 408 ]);
      Promise.fill go ();
      quiesce ();
      check "reading after a timed-out request" "the request is over");
  Atomic.set stray None;
  with_connection (fun c ->
      exchange c (get "/stray-write") 1;
      quiesce ();
      check "writing after the stream" "the stream is over";
      Alcotest.(check string)
        "nothing late on the wire" "in time" (List.hd (responses c)).body)

let no_services_is_an_error () =
  match Log.info "nowhere" with
  | () -> Alcotest.fail "logged without services"
  | exception Invalid_argument msg ->
      Alcotest.(check bool) "says why" true (contains msg "Services.run")

(* {1 Timeouts on in-memory time} *)

let timeouts = Config.default.timeouts

(* Sends [request] and runs the virtual clock to just before [deadline]
   seconds: nothing may be answered yet; then just past it: the connection
   answers [expected]. *)
let expires c request ~deadline expected =
  c.send request;
  quiesce ();
  In_memory.advance c.mem (deadline -. 0.1);
  quiesce ();
  Alcotest.(check string)
    "nothing before the deadline" "" (Buffer.contents c.output);
  In_memory.advance c.mem 0.2;
  wait_until
    (Printf.sprintf "statuses %s"
       (String.concat ", " (List.map string_of_int expected)))
    (fun () -> statuses c = expected)

let header_timeout () =
  with_connection (fun c ->
      expires c "GET /hello HTTP/1.1\r\nHo" ~deadline:timeouts.request_header
        [ 408 ];
      wait_until "closed" (fun () -> !(c.outcome) <> None);
      Alcotest.(check string)
        "ends the connection" "Server_closed"
        (outcome_name !(c.outcome)))

let body_timeout () =
  with_connection (fun c ->
      expires c
        "POST /read HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"
        ~deadline:timeouts.body [ 408 ])

let handler_timeout () =
  let config =
    { Config.default with timeouts = { timeouts with handler = Some 2. } }
  in
  with_connection ~config (fun c ->
      expires c (get "/sleep") ~deadline:2. [ 503 ];
      let r = List.hd (responses c) in
      Alcotest.(check (option string))
        "and closes" (Some "close")
        (Wire.header r "connection");
      Alcotest.(check bool)
        "logged" true
        (List.exists (fun m -> contains m "handler timed out") (messages c.mem)))

(* A handler timeout cancels the pool work the handler started, at the
   task's next blocking call (issue 14.5). *)
let handler_timeout_stops_pool_work () =
  let config =
    { Config.default with timeouts = { timeouts with handler = Some 1. } }
  in
  Atomic.set pool_work None;
  with_connection ~config (fun c ->
      expires c (get "/pool-spin") ~deadline:1. [ 503 ];
      wait_until "the pool task ended" (fun () ->
          match Atomic.get pool_work with
          | Some p -> Promise.peek p <> None
          | None -> false);
      match Promise.peek (Option.get (Atomic.get pool_work)) with
      | Some (Error Braid.Cancelled) -> ()
      | _ -> Alcotest.fail "the pool task did not end cancelled")

(* The sweeper closes an idle keep-alive connection within one of its ticks
   (an eighth of the shortest timeout) after the deadline, silently. *)
(* [elapsed] seconds after the response, the connection is open until its
   keep-alive deadline and closed silently a sweeper's tick after it. *)
let closes_at_keep_alive c ~elapsed =
  let tick = timeouts.keep_alive /. 8. in
  In_memory.advance c.mem (timeouts.keep_alive -. elapsed -. 0.1);
  quiesce ();
  Alcotest.(check string)
    "open before the deadline" "running"
    (outcome_name !(c.outcome));
  In_memory.advance c.mem (0.1 +. tick +. 0.01);
  wait_until "closed" (fun () -> !(c.outcome) <> None);
  Alcotest.(check string)
    "closed silently" "Peer_closed"
    (outcome_name !(c.outcome))

let keep_alive_timeout () =
  with_connection (fun c ->
      exchange c (get "/hello") 1;
      closes_at_keep_alive c ~elapsed:0.;
      check_statuses "nothing more sent" [ 200 ] c)

(* The time between two of the sweeper's looks, at most: its tick is at most
   a second. *)
let look = 1.05

(* [n] of the sweeper's looks. *)
let sweeper_looks c n =
  for _ = 1 to n do
    In_memory.advance c.mem look;
    quiesce ()
  done

(* Whether the connection waits outside its handlers, and the buffers it
   holds. *)
let check_idle c when_ ~parked ~buffers =
  Alcotest.(check int) (when_ ^ ": parked") parked (Connection.parked c.context);
  Alcotest.(check int)
    (when_ ^ ": buffers held") buffers
    (Connection.buffers_held c.context)

(* Parked (waiting outside its handlers), a connection keeps the deadline
   of the wait it left. *)
let keep_alive_while_parked () =
  with_connection ~await:true (fun c ->
      exchange c (get "/hello") 1;
      sweeper_looks c 3;
      Alcotest.(check int) "parked" 1 (Connection.parked c.context);
      closes_at_keep_alive c ~elapsed:(3. *. look))

(* A request that arrived before the keep-alive deadline but was not read
   yet when the sweeper ran (the whole process was stopped meanwhile) is
   served, not lost. *)
let request_waiting_after_pause () =
  let tick = timeouts.keep_alive /. 8. in
  with_connection (fun c ->
      exchange c (get "/hello") 1;
      In_memory.advance c.mem (timeouts.keep_alive -. 1.);
      quiesce ();
      c.arrive (get "/hello");
      In_memory.advance c.mem (1. +. (2. *. tick));
      quiesce ();
      Alcotest.(check string)
        "still open past the deadline" "running"
        (outcome_name !(c.outcome));
      c.send "";
      wait_until "the waiting request answered" (fun () ->
          List.length (responses c) = 2);
      check_statuses "both served" [ 200; 200 ] c)

(* An idle keep-alive connection gives its buffers back to the loop's pool
   once the sweeper has seen it waiting a tick (issue 13.1). *)
let idle_holds_no_buffer () =
  with_connection ~await:true (fun c ->
      exchange c (get "/hello") 1;
      quiesce ();
      check_idle c "right after the request" ~parked:0 ~buffers:2;
      sweeper_looks c 3;
      check_idle c "idle a tick" ~parked:1 ~buffers:0;
      exchange c (get "/hello") 2;
      check_statuses "and the next request is served" [ 200; 200 ] c;
      Alcotest.(check int) "back inside for it" 0 (Connection.parked c.context);
      (* Parked twice, and the keep-alive deadline still holds. *)
      sweeper_looks c 3;
      Alcotest.(check int) "parked again" 1 (Connection.parked c.context);
      exchange c (get "/hello") 3;
      check_statuses "served again" [ 200; 200; 200 ] c)

(* A parked connection woken with nothing to read (a readiness event whose
   bytes an earlier read had taken) goes back into its read, which waits.
   The sweeper parks it again, its buffers back in the pool, as any idle
   one; before, it held its fiber and its buffer until its next request or
   its deadline, unseen by the sweeper. *)
let spurious_wake_parks_again () =
  let config =
    { Config.default with timeouts = { timeouts with keep_alive = 60. } }
  in
  with_connection ~config ~await:true (fun c ->
      exchange c (get "/hello") 1;
      sweeper_looks c 3;
      check_idle c "idle a tick" ~parked:1 ~buffers:0;
      c.wake_spuriously ();
      quiesce ();
      (* Back inside, in a read that holds the input buffer. *)
      check_idle c "woken for nothing" ~parked:0 ~buffers:1;
      sweeper_looks c 3;
      check_idle c "idle a tick again" ~parked:1 ~buffers:0;
      exchange c (get "/hello") 2;
      check_statuses "and the next request is served" [ 200; 200 ] c)

(* After a burst of connections, the sweeper gives the memory back
   (compaction) once they have fallen to an eighth of their peak; a small
   crowd does not trigger it. *)
let memory_back_after_burst () =
  let compactions () = (Gc.quick_stat ()).compactions in
  let crowd n =
    let mem = In_memory.create () in
    Braid_fifo.run @@ fun () ->
    In_memory.run mem @@ fun () ->
    Switch.run @@ fun sw ->
    let context = Connection.context () in
    let sweeper = Fiber.fork ~sw (fun () -> Connection.sweep context) in
    let closed = Promise.create () in
    let read _ _ _ =
      Promise.await closed;
      0
    in
    let connections =
      List.init n (fun _ ->
          Fiber.fork ~sw (fun () ->
              ignore
                (Connection.serve_stream context Config.default ~peer:None ~read
                   ~write:(fun _ _ _ -> ())
                   ())))
    in
    quiesce ();
    In_memory.advance mem 1.;
    quiesce ();
    let during = compactions () in
    Promise.fill closed ();
    List.iter Fiber.join connections;
    (* Within a few of the sweeper's looks (it failed once in about forty
       runs of [make test] with one look, and never alone). *)
    let rec looks n =
      In_memory.advance mem 1.;
      quiesce ();
      if n > 1 && compactions () = during then looks (n - 1)
    in
    looks 3;
    Fiber.cancel sweeper;
    (during, compactions ())
  in
  let before = compactions () in
  let during, after = crowd 600 in
  Alcotest.(check int) "none while they are open" before during;
  Alcotest.(check int) "one once they closed" (before + 1) after;
  let during, after = crowd 100 in
  Alcotest.(check int) "none for a small crowd" during after

(* {1 On a socket, with the production services} *)

let on_a_socket () =
  let dir = Filename.temp_dir "braid-services" "" in
  let error_log = Filename.concat dir "error.log" in
  let writer = Log_writer.create ~error:error_log () in
  Braid_pool.with_pool ~domains:1 @@ fun pool ->
  let settings =
    Real_services.settings ~log_level:Info ~logger:writer (routes pool)
  in
  let server =
    match
      Server.create ~settings
        { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" 0 }
    with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  let answers =
    serving
      ~background:(fun () -> Log_writer.run writer)
      server
      (fun port ->
        let s = Unix.socket PF_INET SOCK_STREAM 0 in
        Fun.protect
          ~finally:(fun () -> Unix.close s)
          (fun () ->
            Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
            send s
              (get "/fork-log" ^ get "/pool-log" ^ post "/child-read" "sock"
             ^ "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            read_to_end s))
  in
  let log = read_file error_log in
  ignore (Sys.command ("rm -rf " ^ Filename.quote dir));
  let rs, _ = Wire.parse answers in
  Alcotest.(check (list int))
    "answered" [ 200; 200; 200; 200 ]
    (List.map (fun (r : Wire.response) -> r.status) rs);
  Alcotest.(check string) "child read" "child read sock" (List.nth rs 2).body;
  List.iter
    (fun m ->
      Alcotest.(check bool)
        (Printf.sprintf "%S in the error log" m)
        true (contains log m))
    [ "info: from a forked fiber"; "info: from a pool task" ]

(* Bodies read whole are spooled while they arrive (issue 14.3): 100
   connections each 1 byte short of a 999,999-byte upload hold 64 KiB each,
   not 1 MB. The process's peak major heap tells: its growth stays under
   32 MB, where holding the bodies would take 100 MB. *)
let uploads_spooled () =
  let server =
    match
      Server.create
        ~settings:
          (Real_services.settings (routes (Braid_pool.create ~domains:1 ())))
        { Config.default with listen = Braid_io.Net.tcp "127.0.0.1" 0 }
    with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  let size = 999_999 and uploads = 100 in
  let body = String.make (size - 1) 'x' in
  serving server (fun port ->
      Gc.full_major ();
      let before = (Gc.quick_stat ()).top_heap_words in
      let connections =
        List.init uploads (fun _ ->
            let s = Unix.socket PF_INET SOCK_STREAM 0 in
            Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
            let head =
              Printf.sprintf
                "POST /size HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n"
                size
            in
            send s head;
            (* The server reads as the bytes come: writing them all means it
               took all but what the socket buffers hold. *)
            let rec write off =
              if off < String.length body then
                write
                  (off
                  + Unix.write_substring s body off (String.length body - off))
            in
            write 0;
            s)
      in
      List.iter
        (fun s ->
          send s "x";
          Unix.shutdown s SHUTDOWN_SEND;
          let answer = read_to_end s in
          Unix.close s;
          match Wire.parse answer with
          | [ r ], _ ->
              Alcotest.(check string)
                "whole body read" (string_of_int size) r.body
          | _ -> Alcotest.failf "unexpected: %S" answer)
        connections;
      let grown =
        ((Gc.quick_stat ()).top_heap_words - before) * (Sys.word_size / 8)
      in
      if grown > 32 * 1024 * 1024 then
        Alcotest.failf "the peak heap grew by %d MB for %d uploads"
          (grown / 1048576) uploads)

(* Spooling is in use beyond the buffer: with a temporary directory that
   does not exist, a small body still works, a large one fails (500). *)
let spool_beyond_buffer () =
  let config =
    {
      Config.default with
      body_buffer = 16;
      body_temp_dir = "/nonexistent/spool";
    }
  in
  with_connection ~config (fun c ->
      exchange c
        (post "/size" (String.make 16 'a') ^ post "/size" (String.make 17 'b'))
        2;
      check_statuses "in memory, then spooled" [ 200; 500 ] c);
  let dir = Filename.temp_dir "braid-spool" "" in
  let config = { Config.default with body_buffer = 16; body_temp_dir = dir } in
  with_connection ~config (fun c ->
      exchange c
        (post "/read" (String.init 1000 (fun i -> Char.chr (65 + (i mod 26)))))
        1;
      Alcotest.(check string)
        "spooled and read back"
        (String.init 1000 (fun i -> Char.chr (65 + (i mod 26))))
        (List.hd (responses c)).body);
  Alcotest.(check (array string)) "nothing left behind" [||] (Sys.readdir dir);
  Unix.rmdir dir

let () =
  Test_support.Watchdog.start ~seconds:120. "test_services";
  Alcotest.run "services"
    [
      ( "follow the fiber",
        [
          Alcotest.test_case "forked fiber logs" `Quick forked_fiber_logs;
          Alcotest.test_case "pool task logs" `Quick pool_task_logs;
          Alcotest.test_case "child fiber reads the body" `Quick
            child_reads_body;
          Alcotest.test_case "pool task reading the body: an error" `Quick
            pool_read_refused;
          Alcotest.test_case "reading after the request: an error" `Quick
            late_read_refused;
          Alcotest.test_case "left running: no body, no stream" `Quick
            strays_refused;
          Alcotest.test_case "no services: an error" `Quick
            no_services_is_an_error;
          Alcotest.test_case "on a socket" `Quick on_a_socket;
          Alcotest.test_case "uploads spooled: memory bounded" `Quick
            uploads_spooled;
          Alcotest.test_case "spooled beyond the buffer" `Quick
            spool_beyond_buffer;
        ] );
      ( "in-memory time",
        [
          Alcotest.test_case "header timeout" `Quick header_timeout;
          Alcotest.test_case "body timeout" `Quick body_timeout;
          Alcotest.test_case "handler timeout" `Quick handler_timeout;
          Alcotest.test_case "handler timeout stops its pool work" `Quick
            handler_timeout_stops_pool_work;
          Alcotest.test_case "keep-alive timeout" `Quick keep_alive_timeout;
          Alcotest.test_case "keep-alive timeout while parked" `Quick
            keep_alive_while_parked;
          Alcotest.test_case "a request waiting after a pause" `Quick
            request_waiting_after_pause;
          Alcotest.test_case "an idle connection holds no buffer" `Quick
            idle_holds_no_buffer;
          Alcotest.test_case "a spurious wake parks again" `Quick
            spurious_wake_parks_again;
          Alcotest.test_case "memory back after a burst" `Quick
            memory_back_after_burst;
        ] );
    ]
