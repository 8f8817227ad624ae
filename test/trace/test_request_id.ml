(* Request ids: parsed from W3C traceparent, generated otherwise, and
   following the fiber: into forked fibers, pool tasks on other domains and
   Lwt code through the bridge, and into the lines of the log writer. *)

module Id = Braid_web.Log.Request_id

let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
let id_string = function Some id -> Id.to_string id | None -> "(none)"

let traceparent () =
  (match Id.of_traceparent valid with
  | Ok id -> Alcotest.(check string) "trace id" trace_id (Id.to_string id)
  | Error e -> Alcotest.fail e);
  List.iter
    (fun bad ->
      match Id.of_traceparent bad with
      | Ok _ -> Alcotest.failf "accepted %S" bad
      | Error _ -> ())
    [
      "";
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7";
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01";
    ];
  (* A later version may append fields. *)
  match
    Id.of_traceparent
      ("01" ^ String.sub valid 2 (String.length valid - 2) ^ "-more")
  with
  | Ok id -> Alcotest.(check string) "version 01" trace_id (Id.to_string id)
  | Error e -> Alcotest.fail e

let generated () =
  let a = Id.to_string (Id.generate ()) and b = Id.to_string (Id.generate ()) in
  Alcotest.(check int) "32 digits" 32 (String.length a);
  Alcotest.(check bool)
    "hexadecimal" true
    (String.for_all (function '0' .. '9' | 'a' .. 'f' -> true | _ -> false) a);
  Alcotest.(check bool) "distinct" true (a <> b);
  match Id.of_traceparent ("00-" ^ a ^ "-00f067aa0ba902b7-01") with
  | Ok _ -> ()
  | Error e -> Alcotest.failf "a generated id is no trace id: %s" e

(* A domain's generated ids count up by one in their last 11 digits (across
   the carries of 0x0ff to 0x100), under a prefix of their own; another
   domain's have another prefix. *)
let generated_in_sequence () =
  let ids n = List.init n (fun _ -> Id.to_string (Id.generate ())) in
  let counter id = int_of_string ("0x" ^ String.sub id 21 11)
  and prefix id = String.sub id 0 21 in
  let here = ids 300 in
  let first = counter (List.hd here) in
  List.iteri
    (fun i id ->
      Alcotest.(check int) "the next count" (first + i) (counter id);
      Alcotest.(check string)
        "the same prefix"
        (prefix (List.hd here))
        (prefix id))
    here;
  let there = Domain.join (Domain.spawn (fun () -> ids 2)) in
  if prefix (List.hd there) = prefix (List.hd here) then
    Alcotest.fail "two domains share a prefix"

let the_id () = Result.get_ok (Id.of_traceparent valid)

let across_fork () =
  Braid_io.run (fun () ->
      Alcotest.(check string)
        "none outside" "(none)"
        (id_string (Id.current ()));
      Id.with_id (the_id ()) (fun () ->
          let child = Braid.Fiber.fork (fun () -> id_string (Id.current ())) in
          let grandchild =
            Braid.Fiber.fork (fun () ->
                Braid.Fiber.join
                  (Braid.Fiber.fork (fun () -> id_string (Id.current ()))))
          in
          Alcotest.(check string) "child" trace_id (Braid.Fiber.join child);
          Alcotest.(check string)
            "grandchild" trace_id
            (Braid.Fiber.join grandchild));
      Alcotest.(check string)
        "unbound after" "(none)"
        (id_string (Id.current ())))

let across_pool () =
  Braid_pool.with_pool ~domains:1 (fun pool ->
      Braid_io.run (fun () ->
          Id.with_id (the_id ()) (fun () ->
              let task =
                Braid_pool.async pool (fun () ->
                    ((Domain.self () :> int), id_string (Id.current ())))
              in
              let domain, seen = Braid_sync.Promise.await task in
              Alcotest.(check bool)
                "on another domain" true
                (domain <> (Domain.self () :> int));
              Alcotest.(check string) "pool task" trace_id seen)))

let across_lwt () =
  let seen =
    Id.with_id (the_id ()) (fun () ->
        let bridge = Braid_lwt.create () in
        Lwt_main.run
          (Braid_lwt.run bridge (fun () ->
               Braid.Fiber.join
                 (Braid.Fiber.fork (fun () -> id_string (Id.current ()))))))
  in
  Alcotest.(check string) "Lwt bridge, forked fiber" trace_id seen

let read path = In_channel.with_open_bin path In_channel.input_all

let contains text sub =
  let n = String.length sub in
  let rec go i =
    i + n <= String.length text && (String.sub text i n = sub || go (i + 1))
  in
  go 0

(* The writer's lines carry the id of the fiber that logged, including a
   pool task's on another domain. *)
let in_log_lines () =
  let dir = Filename.temp_dir "braid-request-id" "" in
  let access = Filename.concat dir "access.log"
  and error = Filename.concat dir "error.log" in
  let w = Braid_server.Log_writer.create ~access ~error () in
  Braid_pool.with_pool ~domains:1 (fun pool ->
      Braid_io.run (fun () ->
          let writer =
            Braid.Fiber.fork (fun () -> Braid_server.Log_writer.run w)
          in
          Id.with_id (the_id ()) (fun () ->
              Braid_server.Log_writer.access w "GET / 200";
              Braid_sync.Promise.await
                (Braid_pool.async pool (fun () ->
                     Braid_server.Log_writer.error w ~time:0. "from the pool")));
          Braid_server.Log_writer.error w ~time:0. "outside any request";
          Braid.Fiber.cancel writer;
          try Braid.Fiber.join writer with Braid.Cancelled -> ()));
  let access = read access and error = read error in
  Alcotest.(check string)
    "access line"
    ("GET / 200 \"" ^ trace_id ^ "\"\n")
    access;
  if not (contains error ("[" ^ trace_id ^ "] from the pool")) then
    Alcotest.failf "the pool task's error line has no id: %S" error;
  if contains error ("[" ^ trace_id ^ "] outside") then
    Alcotest.failf "a line outside the request has its id: %S" error

(* End to end: a server on a socket, a request with a traceparent header
   and one without; the access log lines end with the header's trace id and
   with a generated one. *)
let http_get port ?(headers = "") target =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
      let request =
        "GET " ^ target ^ " HTTP/1.1\r\nHost: x\r\n" ^ headers
        ^ "Connection: close\r\n\r\n"
      in
      ignore (Unix.write_substring s request 0 (String.length request) : int);
      let b = Buffer.create 256 and chunk = Bytes.create 4096 in
      let rec drain () =
        match Unix.read s chunk 0 (Bytes.length chunk) with
        | 0 -> Buffer.contents b
        | n ->
            Buffer.add_subbytes b chunk 0 n;
            drain ()
      in
      drain ())

let rec wait_for ?(tries = 500) what ready =
  if ready () then ()
  else if tries = 0 then Alcotest.failf "gave up waiting for %s" what
  else (
    Unix.sleepf 0.01;
    wait_for ~tries:(tries - 1) what ready)

let in_the_access_log () =
  let dir = Filename.temp_dir "braid-request-id" "" in
  let access = Filename.concat dir "access.log"
  and error = Filename.concat dir "error.log" in
  let writer = Braid_server.Log_writer.create ~access ~error () in
  let router =
    Braid_web.Router.(
      empty |> add GET "/hello" (fun _ -> Braid_web.Response.string "hello\n"))
  in
  let settings = Braid_server.Real_services.settings ~logger:writer router in
  let config =
    { Braid_server.Config.default with listen = Braid_io.Net.tcp "127.0.0.1" 0 }
  in
  let server =
    match Braid_server.Server.create ~settings config with
    | Ok server -> server
    | Error e -> Alcotest.fail e
  in
  let port = Atomic.make 0 in
  let domain =
    Domain.spawn (fun () ->
        Braid_server.Server.run
          ~on_listen:(function
            | ADDR_INET (_, p) -> Atomic.set port p | ADDR_UNIX _ -> ())
          ~background:(fun () -> Braid_server.Log_writer.run writer)
          server)
  in
  let lines () =
    String.split_on_char '\n' (try read access with Sys_error _ -> "")
    |> List.filter (fun l -> l <> "")
  in
  Fun.protect
    ~finally:(fun () ->
      Braid_server.Server.stop server;
      Domain.join domain)
    (fun () ->
      wait_for "the server to listen" (fun () -> Atomic.get port <> 0);
      let answer =
        http_get (Atomic.get port) "/hello"
          ~headers:("traceparent: " ^ valid ^ "\r\n")
      in
      if not (String.starts_with ~prefix:"HTTP/1.1 200" answer) then
        Alcotest.failf "not a 200: %S" answer;
      ignore (http_get (Atomic.get port) "/hello" : string);
      wait_for "two access lines" (fun () -> List.length (lines ()) >= 2));
  match lines () with
  | [ traced; untraced ] ->
      let ends_with_id line id =
        String.ends_with ~suffix:("\"" ^ id ^ "\"") line
      in
      if not (contains traced "GET /hello" && ends_with_id traced trace_id) then
        Alcotest.failf "the traced request's line: %S" traced;
      let generated =
        match String.split_on_char '"' untraced |> List.rev with
        | "" :: id :: _ -> id
        | _ -> ""
      in
      Alcotest.(check int) "a generated id" 32 (String.length generated);
      if generated = trace_id then
        Alcotest.fail "the second request got the first one's id"
  | lines ->
      Alcotest.failf "expected two access lines, got %d: %S" (List.length lines)
        (String.concat "\n" lines)

let () =
  Alcotest.run "request id"
    [
      ( "ids",
        [
          Alcotest.test_case "traceparent" `Quick traceparent;
          Alcotest.test_case "generated" `Quick generated;
          Alcotest.test_case "generated in sequence" `Quick
            generated_in_sequence;
        ] );
      ( "follow the fiber",
        [
          Alcotest.test_case "fork" `Quick across_fork;
          Alcotest.test_case "pool task" `Quick across_pool;
          Alcotest.test_case "Lwt bridge" `Quick across_lwt;
          Alcotest.test_case "log lines" `Quick in_log_lines;
          Alcotest.test_case "traceparent to the access log" `Quick
            in_the_access_log;
        ] );
    ]
