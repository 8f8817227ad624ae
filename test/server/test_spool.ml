(* The spool budget on a real socket: uploads held half-sent spool their
   bytes past the body buffer; beyond the budget the next ones get 503 (or
   413 for a body larger than the whole budget), the server keeps serving,
   and the budget comes back to 0 once the uploads end or are abandoned.
   Nothing here measures time: the deadlines only turn a hang into a
   failure. *)

open Braid_server
open Braid_web
open Text_and_process

let budget = 300_000
let mib = 1024 * 1024

let length r =
  match Handler.body_string r with
  | Ok b -> Response.string (string_of_int (String.length b))
  | Error e -> Response.error e.status e.reason

(* [Spool_budget.used] is read from this domain while the server's updates
   it: it is atomic. *)
let with_server ?handler_timeout ?(spool_budget = Some budget) f =
  let spool = Spool_budget.create () in
  let router =
    Router.empty
    |> Router.get "/hello" (fun _ -> Response.string "hello")
    |> Router.post "/upload" length
    |> Router.add ~max_body:(10 * mib) POST "/big" length
  in
  let settings = Real_services.settings ~log_level:Error ~spool router in
  let config =
    {
      Config.default with
      listen = Braid_io.Net.tcp "127.0.0.1" 0;
      body_buffer = 4096;
      spool_budget;
      timeouts = { Config.default.timeouts with handler = handler_timeout };
    }
  in
  let server =
    match Server.create ~settings config with
    | Ok s -> s
    | Error msg -> Alcotest.fail msg
  in
  serving server (fun port -> f ~port ~spool)

let connect port =
  let s = Unix.socket PF_INET SOCK_STREAM 0 in
  Unix.setsockopt_float s SO_RCVTIMEO 10.;
  Unix.connect s (ADDR_INET (Unix.inet_addr_loopback, port));
  s

let upload_head length =
  Printf.sprintf
    "POST /upload HTTP/1.1\r\n\
     Host: t\r\n\
     Connection: close\r\n\
     Content-Length: %d\r\n\
     \r\n"
    length

(* Sends a head declaring [length] and [sent] bytes of it, and holds. *)
let held port ~length ~sent =
  let s = connect port in
  send s (upload_head length ^ String.make sent 'u');
  s

let get port path =
  let s = connect port in
  Fun.protect
    ~finally:(fun () -> Unix.close s)
    (fun () ->
      send s
        (Printf.sprintf
           "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" path);
      match Wire.parse (read_to_end s) with
      | [ r ], _ -> r
      | _ -> Alcotest.fail "not one response")

(* Waits until [cond ()] holds, for at most 10 s. *)
let eventually name cond =
  let deadline = Unix.gettimeofday () +. 10. in
  let rec go () =
    if not (cond ()) then
      if Unix.gettimeofday () > deadline then Alcotest.failf "never: %s" name
      else (
        Unix.sleepf 0.01;
        go ())
  in
  go ()

(* The sockets that answer within [seconds], with their responses, and
   those that do not. *)
let answered sockets ~seconds =
  let deadline = Unix.gettimeofday () +. seconds in
  let rec go pending acc =
    let left = deadline -. Unix.gettimeofday () in
    if pending = [] || left <= 0. then (acc, pending)
    else
      match Unix.select pending [] [] left with
      | [], _, _ -> (acc, pending)
      | ready, _, _ ->
          let responses =
            List.map
              (fun s ->
                match Wire.parse (read_to_end s) with
                | r :: _, _ -> (s, r)
                | [], _ -> Alcotest.fail "closed without an answer")
              ready
          in
          go
            (List.filter (fun s -> not (List.memq s ready)) pending)
            (responses @ acc)
  in
  go sockets []

let check_int = Alcotest.(check int)

let beyond_the_budget () =
  with_server @@ fun ~port ~spool ->
  (* Six uploads each holding 100 KB of a 200 KB body: 600 KB wanted, the
     budget is 300 KB. *)
  let sockets =
    List.init 6 (fun _ -> held port ~length:200_000 ~sent:100_000)
  in
  let refused, holding = answered sockets ~seconds:2. in
  Alcotest.(check bool) "some uploads were refused" true (refused <> []);
  List.iter
    (fun (_, (r : Wire.response)) ->
      check_int "refused with 503" 503 r.status;
      Alcotest.(check (option string))
        "Retry-After" (Some "5")
        (Wire.header r "retry-after"))
    refused;
  Alcotest.(check bool) "some uploads still held" true (holding <> []);
  let used = Spool_budget.used spool in
  Alcotest.(check bool)
    (Printf.sprintf "within the budget (%d bytes held)" used)
    true
    (used > 0 && used <= budget);
  check_int "refusals counted" (List.length refused)
    (Spool_budget.refused spool);
  (* The server keeps serving meanwhile. *)
  check_int "GET meanwhile" 200 (get port "/hello").status;
  (* The other held uploads are abandoned: their bytes come back, and the
     one left can finish: 200. *)
  let first = List.hd holding in
  List.iter Unix.close (List.tl holding);
  eventually "the abandoned uploads' bytes back" (fun () ->
      Spool_budget.used spool <= 100_000);
  send first (String.make 100_000 'v');
  (match Wire.parse (read_to_end first) with
  | r :: _, _ ->
      check_int "a held upload completes" 200 r.status;
      Alcotest.(check string) "its whole body" "200000" r.body
  | [], _ -> Alcotest.fail "no answer");
  List.iter Unix.close (first :: List.map fst refused);
  eventually "the budget back to 0" (fun () -> Spool_budget.used spool = 0);
  (* And a new upload has the whole budget. *)
  let s = held port ~length:250_000 ~sent:250_000 in
  (match Wire.parse (read_to_end s) with
  | r :: _, _ -> check_int "after: 200" 200 r.status
  | [], _ -> Alcotest.fail "no answer");
  Unix.close s;
  eventually "back to 0 again" (fun () -> Spool_budget.used spool = 0)

(* A body declared larger than the whole budget (but within the body limit)
   is refused as soon as it would spool: 413, the budget untouched. *)
let larger_than_the_budget () =
  with_server @@ fun ~port ~spool ->
  let s = held port ~length:(budget + 1) ~sent:10_000 in
  (match Wire.parse (read_to_end s) with
  | r :: _, _ ->
      check_int "413" 413 r.status;
      Alcotest.(check bool)
        "names the budget" true
        (contains r.body (Printf.sprintf "limit %d bytes" budget))
  | [], _ -> Alcotest.fail "no answer");
  Unix.close s;
  check_int "nothing held" 0 (Spool_budget.used spool)

(* A handler cancelled (its timeout) while its body spools gives the bytes
   back, the client still connected. *)
let cancelled_reader () =
  with_server ~handler_timeout:0.5 @@ fun ~port ~spool ->
  let s = held port ~length:200_000 ~sent:100_000 in
  eventually "the upload spools" (fun () -> Spool_budget.used spool > 0);
  (match Wire.parse (read_to_end s) with
  | r :: _, _ -> check_int "handler timed out: 503" 503 r.status
  | [], _ -> Alcotest.fail "no answer");
  eventually "the budget back to 0" (fun () -> Spool_budget.used spool = 0);
  Unix.close s

(* A route's own body limit above the server's (1 MiB), by curl: 2 MB
   with Content-Length and chunked; the server's limit elsewhere, and the
   413 names it. *)
let raised_route_limit () =
  with_server ~spool_budget:None @@ fun ~port ~spool:_ ->
  let file = Filename.temp_file "braid-upload" ".bin" in
  Fun.protect ~finally:(fun () -> Sys.remove file) @@ fun () ->
  write_file file (String.make 2_000_000 'c');
  let curl target extra =
    let out = Filename.temp_file "braid-curl" ".out" in
    let command =
      Printf.sprintf
        "curl --silent --max-time 30 -o %s -w '%%{http_code}' --data-binary \
         @%s %s http://127.0.0.1:%d%s"
        (Filename.quote out) (Filename.quote file) extra port target
    in
    let ic = Unix.open_process_in command in
    let code = In_channel.input_all ic in
    ignore (Unix.close_process_in ic);
    let body = read_file out in
    Sys.remove out;
    (code, body)
  in
  Alcotest.(check (pair string string))
    "2 MB to a 10 MiB route" ("200", "2000000") (curl "/big" "");
  Alcotest.(check (pair string string))
    "2 MB chunked to a 10 MiB route" ("200", "2000000")
    (curl "/big" "-H 'Transfer-Encoding: chunked'");
  let code, body = curl "/upload" "" in
  Alcotest.(check string) "2 MB to a route without a limit" "413" code;
  Alcotest.(check bool)
    "the 413 names the limit" true
    (contains body "limit 1048576 bytes");
  let code, _ = curl "/upload" "-H 'Transfer-Encoding: chunked'" in
  Alcotest.(check string) "chunked, without a limit" "413" code

let units () =
  let t = Spool_budget.create ~limit:100 () in
  let ok = Alcotest.(check bool) in
  ok "60 fit" true (Spool_budget.reserve t ~held:0 60 = Ok ());
  ok "50 more: full" true
    (Spool_budget.reserve t ~held:0 50 = Error Spool_budget.Full);
  ok "a body of 101: too large" true
    (Spool_budget.reserve t ~held:0 ~total:101 10 = Error Spool_budget.Too_large);
  ok "held 95 + 10: too large" true
    (Spool_budget.reserve t ~held:95 10 = Error Spool_budget.Too_large);
  check_int "refusals" 3 (Spool_budget.refused t);
  Spool_budget.release t 60;
  check_int "released" 0 (Spool_budget.used t);
  let unbounded = Spool_budget.create () in
  ok "unbounded" true
    (Spool_budget.reserve unbounded ~held:(max_int / 2) (max_int / 2) = Ok ());
  (* The default: a quarter of the free space, at most 1 GiB. *)
  let derived = Spool_limit.limit_for Config.default in
  ok "derived within (0, 1 GiB]" true
    (derived > 0 && derived <= Spool_limit.default_cap)

let () =
  Test_support.Watchdog.start ~seconds:120. "test_spool";
  Alcotest.run "spool budget"
    [
      ("budget", [ Alcotest.test_case "reserve, release" `Quick units ]);
      ( "server",
        [
          Alcotest.test_case "uploads beyond the budget: 503" `Quick
            beyond_the_budget;
          Alcotest.test_case "a body larger than the budget: 413" `Quick
            larger_than_the_budget;
          Alcotest.test_case "a cancelled reader gives back" `Quick
            cancelled_reader;
          Alcotest.test_case "a route's limit above the server's (curl)" `Quick
            raised_route_limit;
        ] );
    ]
