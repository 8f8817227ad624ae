open Cmdliner

(* The ring is read from outside the program: it does not run the reader
   on one of its own threads (taking its domain's lock every few ms), which
   the overhead measured in docs/tracing.md would include. *)
let poll_interval = 0.005

let remove_ring dir pid =
  (try Sys.remove (Filename.concat dir (string_of_int pid ^ ".events"))
   with Sys_error _ -> ());
  try Sys.rmdir dir with Sys_error _ -> ()

let child_environment dir =
  let ours =
    [|
      "OCAML_RUNTIME_EVENTS_START=1";
      "OCAML_RUNTIME_EVENTS_DIR=" ^ dir;
      (* Kept after the program exits, so that its last events can be read. *)
      "OCAML_RUNTIME_EVENTS_PRESERVE=1";
      "BRAID_TRACE_EVENTS=1";
    |]
  in
  let inherited =
    Unix.environment () |> Array.to_list
    |> List.filter (fun v -> not (String.starts_with ~prefix:"BRAID_TRACE=" v))
    |> Array.of_list
  in
  Array.append ours inherited

let record output program args =
  let dir = Filename.temp_dir "braid-trace" "" in
  (* Ctrl-C reaches the program (same process group); we outlive it to
     write what it did. *)
  Sys.set_signal Sys.sigint Sys.Signal_ignore;
  match
    Unix.create_process_env program
      (Array.of_list (program :: args))
      (child_environment dir) Unix.stdin Unix.stdout Unix.stderr
  with
  | exception Unix.Unix_error (e, _, _) ->
      Printf.eprintf "braid trace: cannot run %s: %s\n" program
        (Unix.error_message e);
      127
  | pid ->
      let attach recorder =
        match recorder with
        | Some _ -> recorder
        | None -> Result.to_option (Braid_trace.Recorder.of_process ~dir ~pid)
      in
      let rec follow recorder =
        let recorder = attach recorder in
        Option.iter
          (fun r -> ignore (Braid_trace.Recorder.poll r : int))
          recorder;
        match Unix.waitpid [ WNOHANG ] pid with
        | 0, _ ->
            Unix.sleepf poll_interval;
            follow recorder
        | _, status -> (recorder, status)
        | exception Unix.Unix_error (EINTR, _, _) -> follow recorder
      in
      let recorder, status = follow None in
      let recorder = attach recorder in
      let code =
        match status with WEXITED n -> n | WSIGNALED _ | WSTOPPED _ -> 128
      in
      (match recorder with
      | None ->
          Printf.eprintf "braid trace: %s left no event ring in %s\n" program
            dir
      | Some r ->
          ignore (Braid_trace.Recorder.poll r : int);
          let events = Braid_trace.Recorder.events r in
          Braid_trace.Recorder.close r;
          Braid_trace.Chrome.to_file output events;
          Printf.eprintf "braid trace: %d events written to %s\n"
            (List.length events) output);
      remove_ring dir pid;
      code

let render trace output request =
  let output =
    match output with
    | Some o -> o
    | None -> Filename.remove_extension trace ^ ".svg"
  in
  match Braid_trace_render.svg_of_file ?request trace with
  | Ok svg ->
      Out_channel.with_open_bin output (fun oc -> output_string oc svg);
      Printf.eprintf "braid trace render: %s\n" output;
      0
  | Error e ->
      Printf.eprintf "braid trace render: %s: %s\n" trace e;
      1

let output =
  Arg.(
    value & opt string "trace.json"
    & info [ "o"; "output" ] ~docv:"FILE"
        ~doc:"Where to write the trace (Chrome JSON).")

let command = Arg.(non_empty & pos_all string [] & info [] ~docv:"PROGRAM ARGS")

let record_term =
  Term.(
    const (fun output argv ->
        Stdlib.exit (record output (List.hd argv) (List.tl argv)))
    $ output $ command)

let render_cmd =
  let trace = Arg.(required & pos 0 (some file) None & info [] ~docv:"TRACE") in
  let svg =
    Arg.(
      value
      & opt (some string) None
      & info [ "o"; "output" ] ~docv:"FILE.svg"
          ~doc:"Where to write the picture.")
  in
  let request =
    Arg.(
      value
      & opt (some string) None
      & info [ "request" ] ~docv:"ID"
          ~doc:
            "Draw only the time around the request with this id (the last \
             field of its access-log line).")
  in
  Cmd.v
    (Cmd.info "render" ~doc:"Draw a trace as an SVG timeline.")
    Term.(
      const (fun trace svg request -> Stdlib.exit (render trace svg request))
      $ trace $ svg $ request)

let cmd =
  let doc =
    "Record a Braid program's trace (Perfetto opens it), or draw one."
  in
  let man =
    [
      `S Manpage.s_description;
      `P
        "$(b,braid trace -- PROGRAM ARGS) runs PROGRAM with Braid's trace \
         events on and writes them, with the runtime's GC phases, as a Chrome \
         JSON trace (open it in https://ui.perfetto.dev). \
         $(b,BRAID_TRACE=FILE) in the environment of any Braid program does \
         the same from inside it.";
      `Pre "  braid trace -o serve.json -- braid serve --demo --port 8080";
      `Pre "  braid trace render serve.json -o serve.svg";
    ]
  in
  Cmd.group ~default:record_term (Cmd.info "trace" ~doc ~man) [ render_cmd ]
