(* 10,000 connections leave the number of open descriptors unchanged. *)

open Braid_io
open Common

let connections = 10_000
let concurrent = 100

let no_fd_leak () =
  let before_loop = open_fds () in
  run (fun () ->
      within "10,000 connections" @@ fun () ->
      with_echo_server @@ fun addr ->
      let before = open_fds () in
      for _ = 1 to connections / concurrent do
        Switch.run (fun sw ->
            for _ = 1 to concurrent do
              ignore
                (Fiber.fork ~sw (fun () ->
                     Switch.run (fun sw ->
                         let s = Net.connect ~sw addr in
                         let buf = Bytes.of_string "ping" in
                         Net.write_all s buf 0 4;
                         read_exactly s buf 4)))
            done)
      done;
      (* The server closes its side when it reads the end of stream: let it. *)
      let rec wait_server_side n =
        if open_fds () > before && n > 0 then (
          Time.sleep 0.001;
          wait_server_side (n - 1))
      in
      wait_server_side 10_000;
      Alcotest.(check int) "descriptors during the loop" before (open_fds ()));
  Alcotest.(check int) "descriptors after the loop" before_loop (open_fds ())

(* More descriptors ready at once than one epoll_wait takes (64): every
   reader is woken, those past the first 64 by later waits. Epoll reports an
   edge once, so an event the loop took and then dropped would leave its
   reader waiting for ever. *)
let pipes = 300

let many_ready_at_once () =
  run (fun () ->
      within "300 ready at once" @@ fun () ->
      Switch.run @@ fun sw ->
      let ends = List.init pipes (fun _ -> Unix.pipe ~cloexec:true ()) in
      Fun.protect ~finally:(fun () ->
          List.iter (fun (_, w) -> Unix.close w) ends)
      @@ fun () ->
      let readers =
        List.map
          (fun (r, _) ->
            let fd = Fd.of_unix ~sw r in
            Fiber.fork ~sw (fun () -> Fd.read_into fd (Bytes.create 1) 0 1))
          ends
      in
      eventually "every reader waits" (fun () -> fst (waiters ()) >= pipes);
      (* All written before the loop looks again: its next wait finds 300. *)
      List.iter (fun (_, w) -> ignore (Unix.write_substring w "x" 0 1)) ends;
      List.iter
        (fun reader ->
          Alcotest.(check int) "one byte read" 1 (Fiber.join reader))
        readers)

let () =
  Alcotest.run "fds"
    [
      ("leak", [ Alcotest.test_case "10,000 connections" `Quick no_fd_leak ]);
      ( "readiness",
        [
          Alcotest.test_case "more ready than one wait takes" `Quick
            many_ready_at_once;
        ] );
    ]
