let run ?(lwt = false) f =
  let r, w = Unix.pipe ~cloexec:true () in
  flush_all ();
  match if lwt then Lwt_unix.fork () else Unix.fork () with
  | 0 ->
      Unix.close r;
      let out = Unix.out_channel_of_descr w in
      (match f () with
      | s -> output_string out s
      | exception e -> prerr_endline ("bench child: " ^ Printexc.to_string e));
      close_out out;
      Unix._exit 0
  | pid ->
      Unix.close w;
      (pid, Unix.in_channel_of_descr r)

let reap pid =
  let rec wait () =
    try ignore (Unix.waitpid [] pid)
    with Unix.Unix_error (Unix.EINTR, _, _) -> wait ()
  in
  wait ()

let result (pid, ic) =
  let s = In_channel.input_all ic in
  close_in ic;
  reap pid;
  if s = "" then failwith "bench child failed" else s

let kill (pid, ic) =
  Unix.kill pid Sys.sigkill;
  close_in ic;
  reap pid

let children_cpu_s () =
  let t = Unix.times () in
  t.tms_cutime +. t.tms_cstime
