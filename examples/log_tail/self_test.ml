(* End-to-end check of the service, run by [make test]: in a fresh directory, a
   writer fiber appends to a log, rotates it and truncates it while the service
   follows it, and a UDP collector fiber receives the summaries. Each expected
   event must arrive exactly once, by UDP and in the output file, and a ticker
   fiber checks that the loop never stalled meanwhile. *)

open Braid_io

(* Upper-cases its line; exits 3 or hangs for lines that say so. *)
let command =
  {|read -r line; case "$line" in *slow*) exec sleep 5;; *exit*) exit 3;; esac; printf '%s\n' "$line" | tr a-z A-Z|}

(* Line, status, output: written as literals, not computed. *)
let expected =
  [
    ("ERROR: slow request", "timeout", "");
    ("ERROR: disk full", "exit 0", "ERROR: DISK FULL");
    ("ERROR: halfway", "exit 0", "ERROR: HALFWAY");
    ("ERROR: exit 3", "exit 3", "");
    ("ERROR: after rotation", "exit 0", "ERROR: AFTER ROTATION");
    ("ERROR: truncated", "exit 0", "ERROR: TRUNCATED");
  ]

(* A summary without its duration. *)
let strip_ms s =
  let marker = {|"ms":|} and n = String.length s in
  let rec find i =
    if i < 0 then s
    else if String.sub s i (min (String.length marker) (n - i)) = marker then
      String.sub s 0 (i + String.length marker)
    else find (i - 1)
  in
  find (n - 1)

let run_checks ~dir =
  let log = Filename.concat dir "app.log"
  and out = Filename.concat dir "events.jsonl" in
  (* Before the service starts: tailing starts at the end, so no event. *)
  Path.save log "ERROR: before start, not an event\n";
  Switch.run @@ fun sw ->
  let collector =
    match Net.resolve "localhost" 0 with
    | addr :: _ -> Udp.bind ~sw addr
    | [] -> raise (Net.Unknown_host "localhost")
  in
  let port =
    match Udp.local_addr collector with
    | ADDR_INET (_, port) -> port
    | ADDR_UNIX _ -> assert false
  in
  let received = ref [] in
  let collect =
    Fiber.fork ~sw (fun () ->
        let buf = Bytes.create 65536 in
        while true do
          let got = Udp.receive_from collector buf 0 65536 in
          received := Bytes.sub_string buf 0 got.length :: !received
        done)
  in
  let max_gap = ref 0 in
  let ticker =
    Fiber.fork ~sw (fun () ->
        let rec tick last =
          Time.sleep 0.01;
          let now = Time.now_ns () in
          max_gap := max !max_gap (now - last);
          tick now
        in
        tick (Time.now_ns ()))
  in
  let ready = Braid_sync.Promise.create () in
  let config =
    Service.
      {
        log;
        pattern = "ERROR";
        command;
        collector = Some ("localhost", port);
        output = out;
        jobs = 2;
        timeout = 1.0;
        poll = 0.02;
        from_start = false;
        exit_after = Some (List.length expected);
      }
  in
  let service =
    Fiber.fork ~sw (fun () ->
        Service.run config ~ready:(Braid_sync.Promise.fill ready))
  in
  let append s = Path.save ~append:true log s in
  let wait_for n =
    while List.length !received < n do
      Time.sleep 0.01
    done
  in
  Braid_sync.Promise.await ready;
  (* The slow command holds one of the two permits for a second; the next
     three lines run on the other one meanwhile. *)
  append "ERROR: slow request\n";
  append "info: not an event\nERROR: disk full\n";
  append "ERROR: half";
  Time.sleep 0.05;
  append "way\nERROR: exit 3\n";
  wait_for 4;
  Path.rename log (log ^ ".1");
  Path.save log "info: a new file\nERROR: after rotation\n";
  wait_for 5;
  (* Shorter than what was read of this file: seen as a truncation. *)
  Path.save log "ERROR: truncated\n";
  Fiber.join service;
  ignore (Time.timeout 1. (fun () -> wait_for (List.length expected)));
  Fiber.cancel collect;
  Fiber.cancel ticker;
  let datagrams = List.rev !received in
  let in_file =
    String.split_on_char '\n' (Path.load out) |> List.filter (( <> ) "")
  in
  let want =
    List.sort compare
      (List.map
         (fun (line, status, output) ->
           Service.summary_prefix ~line ~status ~output)
         expected)
  in
  let same what got =
    let got = List.sort compare (List.map strip_ms got) in
    if got = want then true
    else (
      Printf.printf "FAIL: %s: expected\n  %s\ngot\n  %s\n" what
        (String.concat "\n  " want)
        (String.concat "\n  " got);
      false)
  in
  let by_udp = same "UDP datagrams" datagrams in
  let in_file = same "the output file" in_file in
  (* The slow command started first and held its permit for a second while
     the other three ran: its summary came last. *)
  let slow_last =
    match List.filteri (fun i _ -> i < 4) datagrams |> List.rev with
    | last :: _ when String.starts_with ~prefix:{|{"line":"ERROR: slow|} last ->
        true
    | _ ->
        print_endline "FAIL: the slow command held up the others";
        false
  in
  let gap_ms = !max_gap / 1_000_000 in
  let no_stall = gap_ms < 500 in
  if not no_stall then Printf.printf "FAIL: the loop stalled for %d ms\n" gap_ms;
  let ok = by_udp && in_file && slow_last && no_stall in
  if ok then
    Printf.printf
      "log_tail self-test: %d events by UDP and in the file, longest loop \
       stall %d ms\n"
      (List.length expected) gap_ms;
  ok

let run () =
  let dir =
    Filename.concat
      (Filename.get_temp_dir_name ())
      (Printf.sprintf "log_tail-%d-%06x" (Unix.getpid ())
         (Random.State.bits (Random.State.make_self_init ()) land 0xffffff))
  in
  Braid_io.run @@ fun () ->
  Path.mkdir ~perm:0o700 dir;
  let ok =
    match Time.timeout 8. (fun () -> run_checks ~dir) with
    | Some ok -> ok
    | None ->
        print_endline "FAIL: the self-test did not finish within 8 s";
        false
  in
  if ok then (
    List.iter (fun f -> Path.unlink (Filename.concat dir f)) (Path.read_dir dir);
    Path.rmdir dir)
  else Printf.printf "files kept in %s\n" dir;
  ok
