let start ?(seconds = 300.) name =
  (* Alcotest redirects stderr while a test runs: keep the real one. *)
  let stderr_fd = Unix.dup Unix.stderr in
  ignore
    (Thread.create
       (fun () ->
         Thread.delay seconds;
         let msg =
           Printf.sprintf
             "%s: still running after %.0f s: deadlock or lost wake-up\n" name
             seconds
         in
         ignore (Unix.write_substring stderr_fd msg 0 (String.length msg));
         exit 2)
       ())
