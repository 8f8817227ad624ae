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

let () =
  Alcotest.run "fds"
    [ ("leak", [ Alcotest.test_case "10,000 connections" `Quick no_fd_leak ]) ]
